"""Build the pinned control-plane binaries from the Go module proxy into a cache outside the repo.

The pins live in committed wrapper modules under ``devfleet/go/``. The cache key covers those files,
the Go toolchain version and the link flags, so binaries are rebuilt exactly when a pin changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

GO_DIR = Path(__file__).parent / "go"
CONTROL_PLANE_MODULE = GO_DIR / "controlplane"
KWOK_MODULE = GO_DIR / "kwok"
HELM_MODULE = GO_DIR / "helm"
# Signs and verifies the image (tests/integration/image); cached apart so a cosign pin leaves the
# control plane's cache alone.
COSIGN_MODULE = GO_DIR / "cosign"
COSIGN_PACKAGE = "github.com/sigstore/cosign/v2/cmd/cosign"
# The fleet's tracing backend (devfleet.jaeger): receives OTLP, serves its query API and UI.
JAEGER_MODULE = GO_DIR / "jaeger"
JAEGER_PACKAGE = "github.com/jaegertracing/jaeger/cmd/jaeger"

# Makes the SBOM of the image's Python packages (tests/integration/image). It lives in a virtual
# environment of its own: its validation extra pulls in jsonschema's format checkers, whose
# rfc3987-syntax builds a grammar when imported (over a second of CPU), which every syncer process
# started from the project's environment would pay for; syncer checks no formats.
CYCLONEDX_BOM = "cyclonedx-bom==7.5.0"

BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok", "helm")
_K8S_PACKAGES = (
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "k8s.io/kubernetes/cmd/kube-scheduler",
)
# Bumped when the way binaries are built changes without a pin changing.
_RECIPE = "1"


def cache_root() -> Path:
    """``$SYNCER_CACHE_DIR``, else ``$XDG_CACHE_HOME/syncer``, else ``~/.cache/syncer``."""
    explicit = os.environ.get("SYNCER_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "syncer"


def _required_version(go_mod: Path, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.M)
    if not match:
        raise RuntimeError(f"{go_mod} does not pin {module}")
    return match.group(1)


@dataclass(frozen=True)
class Pins:
    kubernetes: str
    etcd: str
    kwok: str
    helm: str

    @staticmethod
    def read() -> Pins:
        return Pins(
            kubernetes=_required_version(CONTROL_PLANE_MODULE / "go.mod", "k8s.io/kubernetes"),
            etcd=_required_version(CONTROL_PLANE_MODULE / "go.mod", "go.etcd.io/etcd/server/v3"),
            kwok=_required_version(KWOK_MODULE / "go.mod", "sigs.k8s.io/kwok"),
            helm=_required_version(HELM_MODULE / "go.mod", "helm.sh/helm/v3"),
        )

    def helm_ldflags(self) -> str:
        return f"-s -w -X helm.sh/helm/v3/internal/version.version={self.helm}"

    def k8s_ldflags(self) -> str:
        major, minor = self.kubernetes.lstrip("v").split(".")[:2]
        flags = ["-s", "-w"]
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [
                f"-X {pkg}.gitVersion={self.kubernetes}",
                f"-X {pkg}.gitMajor={major}",
                f"-X {pkg}.gitMinor={minor}",
                f"-X {pkg}.gitTreeState=clean",
            ]
        return " ".join(flags)


def _go_version() -> str:
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("Go is needed to build the local fleet (https://go.dev/doc/install); not on PATH")
    return subprocess.run([go, "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def _hash_modules(flags: str, skip: tuple[Path, ...] = (), root: Path | None = None) -> str:
    """The build recipe, Go version, ``flags`` and every module file below ``root`` (default: all of
    GO_DIR, as it is when called) but those below ``skip``, hashed."""
    digest = hashlib.sha256(f"{_RECIPE}\n{_go_version()}\n{flags}\n".encode())
    for path in sorted((root or GO_DIR).rglob("*")):
        if any(path.is_relative_to(s) for s in skip):
            continue
        if path.is_file() and path.suffix in {".mod", ".sum", ".go"}:
            digest.update(str(path.relative_to(GO_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _cache_key(pins: Pins) -> str:
    # The tools cached apart are left out, so that their pins leave the control plane's cache alone.
    return _hash_modules(f"{pins.k8s_ldflags()}\n{pins.helm_ldflags()}", skip=(COSIGN_MODULE, JAEGER_MODULE))


def bin_dir(pins: Pins | None = None) -> Path:
    pins = pins or Pins.read()
    name = f"k8s-{pins.kubernetes}_etcd-{pins.etcd}_kwok-{pins.kwok}_helm-{pins.helm}_{_cache_key(pins)}"
    return cache_root() / "k8s" / name / "bin"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _go_build(module: Path, out: Path, packages: tuple[str, ...], ldflags: str) -> None:
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    cmd = ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", f"{out}{os.sep}", *packages]
    subprocess.run(cmd, cwd=module, env=env, check=True)


def ensure_binaries(progress: Callable[[str], None] | None = None) -> Path:
    """Return the directory holding all fleet binaries, building them first if the cache lacks them."""
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    pins = Pins.read()
    target = bin_dir(pins)
    if all((target / b).is_file() for b in BINARIES):
        return target
    with _locked(cache_root() / "k8s" / ".build.lock"):
        if all((target / b).is_file() for b in BINARIES):
            return target
        say(
            f"building Kubernetes {pins.kubernetes}, etcd {pins.etcd}, kwok {pins.kwok} and helm {pins.helm} "
            f"from the Go module proxy into {target.parent} (a cold build takes several minutes)"
        )
        started = time.monotonic()
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
            staging = Path(tmp) / "bin"
            staging.mkdir()
            say("  compiling kube-apiserver, kube-controller-manager, kube-scheduler and etcd")
            _go_build(CONTROL_PLANE_MODULE, staging, (*_K8S_PACKAGES, "./etcd"), pins.k8s_ldflags())
            say("  compiling kwok")
            _go_build(KWOK_MODULE, staging, ("sigs.k8s.io/kwok/cmd/kwok",), "-s -w")
            say("  compiling helm")
            _go_build(HELM_MODULE, staging, ("helm.sh/helm/v3/cmd/helm",), pins.helm_ldflags())
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        say(f"built in {time.monotonic() - started:.0f}s")
    return target


def _cosign_ldflags(version: str) -> str:
    return f"-s -w -X sigs.k8s.io/release-utils/version.gitVersion={version}"


def ensure_cosign(progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of the pinned cosign binary, building it from the Go module proxy if not cached."""
    version = _required_version(COSIGN_MODULE / "go.mod", "github.com/sigstore/cosign/v2")
    return _ensure_tool(
        _Tool("cosign", COSIGN_MODULE, COSIGN_PACKAGE, version, _cosign_ldflags(version)), progress
    )


def ensure_jaeger(progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of the pinned Jaeger binary, building it from the Go module proxy if not cached."""
    version = _required_version(JAEGER_MODULE / "go.mod", "github.com/jaegertracing/jaeger")
    return _ensure_tool(_Tool("jaeger", JAEGER_MODULE, JAEGER_PACKAGE, version, "-s -w"), progress)


@dataclass(frozen=True)
class _Tool:
    """One binary built from a wrapper module of its own, cached apart under its name."""

    name: str
    module: Path
    package: str
    version: str
    ldflags: str


def _ensure_tool(tool: _Tool, progress: Callable[[str], None] | None) -> Path:
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    key = _hash_modules(tool.ldflags, root=tool.module)
    target = cache_root() / tool.name / f"{tool.name}-{tool.version}_{key}"
    binary = target / tool.name
    if binary.is_file():
        return binary
    with _locked(cache_root() / tool.name / ".build.lock"):
        if binary.is_file():
            return binary
        say(
            f"building {tool.name} {tool.version} from the Go module proxy into {target} "
            "(a cold build takes minutes)"
        )
        started = time.monotonic()
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
            staging = Path(tmp) / "bin"
            staging.mkdir()
            _go_build(tool.module, staging, (tool.package,), tool.ldflags)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        say(f"built in {time.monotonic() - started:.0f}s")
    return binary


def ensure_cyclonedx(progress: Callable[[str], None] | None = None) -> Path:
    """Return the path of ``cyclonedx-py`` from the pinned cyclonedx-bom, installing it first (with pip,
    into a virtual environment of its own in the cache) if not there yet."""
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    target = cache_root() / "cyclonedx" / f"{CYCLONEDX_BOM.replace('==', '-')}-{python}"
    tool, done = target / "bin" / "cyclonedx-py", target / ".installed"
    if done.is_file():
        return tool
    with _locked(cache_root() / "cyclonedx" / ".build.lock"):
        if done.is_file():
            return tool
        say(f"installing {CYCLONEDX_BOM} into {target}")
        # A virtual environment cannot be moved once made: it is made in place, and counts once marked.
        if target.exists():
            shutil.rmtree(target)
        # Nothing of the caller's Python path: the tool's environment holds the tool alone.
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True, env=env)
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--disable-pip-version-check", CYCLONEDX_BOM], check=True, env=env)
        done.write_text(CYCLONEDX_BOM + "\n")
    return tool
