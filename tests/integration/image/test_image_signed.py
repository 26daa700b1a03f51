"""The image pushed by digest to a real loopback registry is signed with cosign and verified: a key
pair made here signs it and ``cosign verify`` accepts that digest; it refuses the same image
re-tagged into another repository, the tag once it names an altered image, and a signature made by
another key. An SBOM of the image's Python packages, made with cyclonedx-py, is attached with
``cosign attest`` and verified."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devfleet.build import ensure_cyclonedx
from tests.integration.image.kit import Image, run_with_containers_conf
from tests.integration.image.registry import SIGN, VERIFY, Cosign, local_registry, push

# The first image test of a run on a new machine makes the debootstrap base (several minutes on two
# busy cores) before it builds the image; later runs find both built.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.image, pytest.mark.timeout(1800)]


@dataclass(frozen=True)
class Pushed:
    """The image in the registry: its tag, its digest reference, and two key pairs (ours, another)."""

    tag: str
    ref: str
    ours: tuple[Path, Path]
    other: tuple[Path, Path]
    cosign: Cosign
    workdir: Path


@pytest.fixture(scope="module")
def pushed(image: Image, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pushed]:
    workdir = tmp_path_factory.mktemp("signing")
    cosign = Cosign.build()
    (workdir / "registry").mkdir()
    with local_registry(workdir / "registry") as registry:
        tag = f"{registry}/syncer:release"
        digest = push(image.ref, tag, workdir)
        yield Pushed(
            tag=tag,
            ref=f"{registry}/syncer@{digest}",
            ours=cosign.key_pair(workdir / "ours"),
            other=cosign.key_pair(workdir / "other"),
            cosign=cosign,
            workdir=workdir,
        )


def _altered(image: Image, workdir: Path) -> str:
    """A copy of the image with one file added: another digest, the same tag once pushed."""
    (workdir / "extra").write_text("not what was signed\n")
    container = run_with_containers_conf("buildah", "from", image.ref).stdout.strip()
    try:
        run_with_containers_conf("buildah", "copy", container, str(workdir / "extra"), "/opt/syncer/extra")
        run_with_containers_conf("buildah", "commit", "--quiet", container, "localhost/syncer:altered")
    finally:
        run_with_containers_conf("buildah", "rm", container, check=False)
    return "localhost/syncer:altered"


def test_the_signed_digest_verifies_and_an_altered_image_or_another_key_is_refused(
    image: Image, pushed: Pushed
) -> None:
    cosign, work = pushed.cosign, pushed.workdir
    (our_key, our_pub), (other_key, other_pub) = pushed.ours, pushed.other
    signed = cosign("sign", *SIGN, "--key", str(our_key), pushed.ref, cwd=work)
    assert signed.returncode == 0, signed.stderr

    verified = cosign("verify", *VERIFY, "--key", str(our_pub), pushed.ref, cwd=work)
    assert verified.returncode == 0, verified.stderr
    claims = json.loads(verified.stdout)
    assert [c["critical"]["image"]["docker-manifest-digest"] for c in claims] == [pushed.ref.split("@")[1]]
    # The tag names the signed digest until it is moved.
    assert cosign("verify", *VERIFY, "--key", str(our_pub), pushed.tag, cwd=work).returncode == 0

    foreign = cosign("verify", *VERIFY, "--key", str(other_pub), pushed.ref, cwd=work)
    assert foreign.returncode != 0
    assert "no matching signatures" in foreign.stderr, foreign.stderr

    # The same image re-tagged into another repository: its signature stays where it was made.
    registry = pushed.tag.split("/")[0]
    copied = push(image.ref, f"{registry}/copied:release", work)
    assert copied == pushed.ref.split("@")[1]
    moved = cosign("verify", *VERIFY, "--key", str(our_pub), f"{registry}/copied@{copied}", cwd=work)
    assert moved.returncode != 0
    assert "no signatures found" in moved.stderr, moved.stderr

    # The tag re-pushed with an altered image: the tag's digest carries no signature of ours.
    altered_digest = push(_altered(image, work), pushed.tag, work)
    assert altered_digest != pushed.ref.split("@")[1]
    retagged = cosign("verify", *VERIFY, "--key", str(our_pub), pushed.tag, cwd=work)
    assert retagged.returncode != 0
    assert "no signatures found" in retagged.stderr or "no matching signatures" in retagged.stderr, (
        retagged.stderr
    )
    # Signed by another key, the altered image is still refused under ours.
    altered_ref = f"{pushed.ref.split('@')[0]}@{altered_digest}"
    assert cosign("sign", *SIGN, "--key", str(other_key), altered_ref, cwd=work).returncode == 0
    refused = cosign("verify", *VERIFY, "--key", str(our_pub), altered_ref, cwd=work)
    assert refused.returncode != 0
    assert "no matching signatures" in refused.stderr, refused.stderr
    # The original digest is untouched by all of it.
    assert cosign("verify", *VERIFY, "--key", str(our_pub), pushed.ref, cwd=work).returncode == 0


_LIST_PACKAGES = (
    "import importlib.metadata as m\n"
    "for d in sorted(m.distributions(), key=lambda d: d.metadata['Name'].lower()):\n"
    "    print(f\"{d.metadata['Name']}=={d.version}\")\n"
)


def test_an_sbom_of_the_image_python_packages_is_attested_and_verified(image: Image, pushed: Pushed) -> None:
    cosign, work = pushed.cosign, pushed.workdir
    (our_key, our_pub), (_, other_pub) = pushed.ours, pushed.other
    listed = image.run("-c", _LIST_PACKAGES, entrypoint="/opt/syncer/bin/python")
    assert listed.returncode == 0, listed.stderr
    (work / "image-packages.txt").write_text(listed.stdout)
    assert any(line.startswith("syncer==") for line in listed.stdout.splitlines()), listed.stdout
    made = run_with_containers_conf(
        str(ensure_cyclonedx()), "requirements", "--of", "JSON",
        "-o", str(work / "sbom.json"), str(work / "image-packages.txt"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    sbom = json.loads((work / "sbom.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX"

    attested = cosign(
        "attest", *SIGN, "--key", str(our_key), "--type", "cyclonedx",
        "--predicate", str(work / "sbom.json"), pushed.ref, cwd=work,
    )  # fmt: skip
    assert attested.returncode == 0, attested.stderr
    verified = cosign(
        "verify-attestation", *VERIFY, "--key", str(our_pub), "--type", "cyclonedx", pushed.ref, cwd=work
    )
    assert verified.returncode == 0, verified.stderr
    envelope = json.loads(verified.stdout.splitlines()[0])
    statement = json.loads(base64.b64decode(envelope["payload"]))
    names = {c["name"] for c in statement["predicate"]["components"]}
    assert "syncer" in names
    assert len(names) == len(listed.stdout.splitlines())
    assert statement["subject"][0]["digest"]["sha256"] == pushed.ref.split("sha256:")[1]

    foreign = cosign(
        "verify-attestation", *VERIFY, "--key", str(other_pub), "--type", "cyclonedx", pushed.ref, cwd=work
    )
    assert foreign.returncode != 0
