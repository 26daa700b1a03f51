"""The kwok Stage objects the fleet runs pods with. Pure: YAML text out.

kwok falls back to its built-in pod stages only when its config holds none, so this file carries the
three built-in pod stages (ready, complete, delete) with one change: a pod carrying the label
``kwok.syncer.dev/hold-not-ready`` is never made Ready. Such a pod gets an IP and runs, but its Ready
and ContainersReady conditions stay False; a pod that is Ready already turns NotReady as soon as
the label is added. Tests use it to make a new version's pods fail their readiness (the label can
be put on the pod template through a RedisCluster's ``spec.podMetadata.labels``) or to take live
pods down. Node stages are left to kwok's defaults.
"""

from __future__ import annotations

from pathlib import Path

HOLD_LABEL = "kwok.syncer.dev/hold-not-ready"

_NOT_DELETED = """\
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'"""

_HOLD_ABSENT = f"""\
    - key: '.metadata.labels["{HOLD_LABEL}"]'
      operator: 'DoesNotExist'"""

_HOLD_PRESENT = f"""\
    - key: '.metadata.labels["{HOLD_LABEL}"]'
      operator: 'Exists'"""

_NOT_READY_STATUS = """\
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: HeldNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: HeldNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}"""

_POD_IP = (
    '      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" )'
    ' ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}'
)

STAGES = f"""\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
{_NOT_DELETED}
    - key: '.status.podIP'
      operator: 'DoesNotExist'
{_HOLD_ABSENT}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "True"
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "True"
        type: ContainersReady
      {{{{ range .spec.readinessGates }}}}
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "True"
        type: {{{{ .conditionType | Quote }}}}
      {{{{ end }}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: true
        restartCount: 0
        state:
          running:
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      initContainerStatuses:
      {{{{ range .spec.initContainers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            finishedAt: {{{{ $now | Quote }}}}
            reason: Completed
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      hostIP: {{{{ NodeIPWith .spec.nodeName | Quote }}}}
{_POD_IP}
      phase: Running
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-hold-not-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
{_NOT_DELETED}
    - key: '.status.podIP'
      operator: 'DoesNotExist'
{_HOLD_PRESENT}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
{_NOT_READY_STATUS}
      hostIP: {{{{ NodeIPWith .spec.nodeName | Quote }}}}
{_POD_IP}
      phase: Running
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-turn-not-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
{_NOT_DELETED}
    - key: '.status.containerStatuses.[].ready'
      operator: 'In'
      values:
      - 'true'
{_HOLD_PRESENT}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
{_NOT_READY_STATUS}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
{_NOT_DELETED}
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{{{ $now | Quote }}}}
            reason: Completed
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  next:
    finalizers:
      empty: true
    delete: true
"""


def write(path: Path) -> Path:
    """Write the stages as a kwok config file (``--config``) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STAGES, encoding="utf-8")
    return path
