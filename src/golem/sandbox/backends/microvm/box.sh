#!/bin/busybox sh
# The box's side of golem's guest init: pid 1 of a new pid and mount namespace, it joins
# the box's cgroup, moves the root disk over / and becomes the supervisor, as the box's
# user with no capabilities, on descriptor 3 (the port golem.0). Before that it writes
# MAGIC on the port: the host takes it as "booted" and hands the port to its client.
# From the supervisor on, nothing of the box writes to the guest's console.

export PATH=/bin
. /golem/params
root=/newroot
fail() {
    echo "golem-init: $*" >&2
    exit 1
}

for tool in /usr/bin/setpriv /usr/bin/env; do
    [ -x "$root$tool" ] || fail "the image has no $tool (util-linux, coreutils)"
done
python=""
case "$PYTHON" in /*) [ -x "$root$PYTHON" ] && python="$PYTHON" ;; esac
for directory in $(echo "$BOX_PATH" | tr : ' '); do
    [ -n "$python" ] && break
    if [ -x "$root$directory/$PYTHON" ]; then
        python="$directory/$PYTHON"
        break
    fi
done
[ -n "$python" ] || fail "the image has no $PYTHON for the supervisor"

cgroup=/sys/fs/cgroup/box
[ "$CONTAINERS" = 1 ] && cgroup=$cgroup/shell
echo 0 >"$cgroup/cgroup.procs" || fail "cannot join the box's cgroup"
if [ "$CONTAINERS" = 1 ]; then  # the box starts with its engine answering
    until [ -s "$root/run/golem-engine.ready" ]; do usleep 20000; done
    if [ "$(cat "$root/run/golem-engine.ready")" != ready ]; then
        tail -n 20 "$root/run/golem-engine.log" >&2
        fail "the box's container engine did not start"
    fi
fi
mount -t proc -o nosuid,nodev,noexec proc "$root/proc" || fail "cannot mount /proc"
source=$(cat /golem/supervisor.py)
exec 4<>/dev/null
seccomp=""
if [ "$SECCOMP" = 1 ]; then  # the supervisor loads it first thing, for the whole box
    exec 5</golem/seccomp.bpf || fail "no seccomp filter"
    seccomp=GOLEM_SECCOMP_FD=5
fi
printf '%s' "$MAGIC" >&3
cd "$root" && mount --move . / || fail "cannot move the root disk"
exec chroot . /usr/bin/setpriv --reuid="$BOX_UID" --regid="$BOX_GID" --clear-groups \
    --bounding-set=-all --inh-caps=-all --no-new-privs -- \
    /usr/bin/env -i -C /workspace PATH="$BOX_PATH" LANG=C.UTF-8 GOLEM_WORKSPACE=/workspace \
    $seccomp "$python" -I -S -u -c "$source" 3 3 0<&4 1>&4 2>&4 4>&-
