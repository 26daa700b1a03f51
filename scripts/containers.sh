# Sourced by the scripts and tests that run podman or buildah: runtime runc, cgroup manager cgroupfs
# and no default ulimits, which a container host without systemd or raised limits needs. The
# settings go in a file under the user's cache directory that CONTAINERS_CONF names.
# shellcheck shell=bash
_conf_dir="${SYNCER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/syncer}/image"
mkdir -p "$_conf_dir"
cat > "$_conf_dir/containers.conf" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
export CONTAINERS_CONF="$_conf_dir/containers.conf"
unset _conf_dir
