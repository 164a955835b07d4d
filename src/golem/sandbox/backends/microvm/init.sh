#!/bin/busybox sh
# golem's guest init: pid 1 of the guest, root, in the initramfs (busybox only).
#
# It loads the virtio modules, mounts the read-only root disk with the box's tmpfs
# (/workspace, /tmp, /dev/shm, a minimal /dev), copies the host's read-only files in,
# then starts the box: the supervisor as pid 1 of a new pid and mount namespace, as the
# box's user, with no capabilities, on the virtio-serial port golem.0. When the box ends,
# the guest powers off (QEMU exits). Nothing here reads what a box wrote.
#
# /golem/params (per box, written by the host) sets BOX_UID BOX_GID WORKSPACE_SIZE
# TMP_SIZE SHM_SIZE RUN_SIZE PIDS PYTHON PROBE MAGIC and CONTAINERS (1: start the box's
# container engine, engine.sh); /golem/mounts lists the host's files.

/bin/busybox --install -s /bin
export PATH=/bin

fail() {
    echo "golem-init: $*" >/dev/console
    poweroff -f
}

mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1

. /golem/params || fail "no parameters"
hostname golem
ip link set lo up  # the guest's only interface: the egress bridge listens on it
for module in $(cat /golem/modules.list); do
    insmod "/golem/modules/$module.ko" || fail "cannot load $module"
done

# The ports are announced by the host after the driver is up, names a moment later.
port_device() {
    for port in /sys/class/virtio-ports/*; do
        if [ "$(cat "$port/name" 2>/dev/null)" = "$1" ]; then
            echo "/dev/${port##*/}"
            return 0
        fi
    done
    return 1
}

wait_for() {
    tries=0
    until "$@"; do
        tries=$((tries + 1))
        [ "$tries" -gt 3000 ] && return 1
        usleep 10000
    done
}

wait_for port_device golem.0 >/dev/null || fail "no port golem.0"
channel=$(port_device golem.0)

if [ "$PROBE" = 1 ]; then
    printf '%s' "$MAGIC" >"$channel"
    poweroff -f
fi

wait_for test -b /dev/vda || fail "no root disk"
mkdir -p /newroot
mount -t ext4 -o ro,noload,nodev /dev/vda /newroot || fail "cannot mount the root disk"
root=/newroot
for place in workspace tmp dev proc; do
    [ -d "$root/$place" ] || fail "the image has no /$place"
done
mount -t tmpfs -o "size=$WORKSPACE_SIZE,mode=0755,uid=$BOX_UID,gid=$BOX_GID,nosuid,nodev" \
    workspace "$root/workspace" || fail "cannot mount /workspace"
mount -t tmpfs -o "size=$TMP_SIZE,mode=1777,nosuid,nodev" tmp "$root/tmp" || fail "no /tmp"

# A minimal /dev, as bubblewrap's --dev: no disk, port or console of the guest in it.
mount -t tmpfs -o size=1m,mode=0755,nosuid,noexec dev "$root/dev" || fail "no /dev"
mknod -m 666 "$root/dev/null" c 1 3
mknod -m 666 "$root/dev/zero" c 1 5
mknod -m 666 "$root/dev/full" c 1 7
mknod -m 666 "$root/dev/random" c 1 8
mknod -m 666 "$root/dev/urandom" c 1 9
mknod -m 666 "$root/dev/tty" c 5 0
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o "size=$SHM_SIZE,mode=1777,nosuid,nodev" shm "$root/dev/shm"

# The host's read-only files (the egress proxy's CA bundle, say) and its sockets, each a
# virtio-serial port that the supervisor's bridge multiplexes. Lines: KIND INDEX TARGET.
if grep -q ' /run/' /golem/mounts.list || [ "$CONTAINERS" = 1 ]; then
    # not nodev: the ports of sockets are device nodes here (read-only once made)
    mount -t tmpfs -o "size=$RUN_SIZE,mode=0755,nosuid" run "$root/run" || fail "no /run"
fi
while read -r kind index target; do
    case "$kind" in
    dir)
        mkdir -p "$root$target" && cp -a "/golem/mounts/$index/." "$root$target/" ||
            fail "cannot copy $target"
        ;;
    file)
        if [ -e "$root$target" ]; then
            mount --bind "/golem/mounts/$index" "$root$target" &&
                mount -o remount,ro,bind "$root$target" || fail "cannot bind $target"
        fi
        ;;
    socket)
        wait_for port_device "golem.$index" >/dev/null || fail "no port golem.$index"
        device=$(port_device "golem.$index")
        numbers=$(cat "/sys/class/virtio-ports/${device#/dev/}/dev")
        mknod -m 600 "$root$target" c "${numbers%:*}" "${numbers#*:}" &&
            chown "$BOX_UID:$BOX_GID" "$root$target" || fail "cannot make $target"
        ;;
    esac
done </golem/mounts.list
if grep -q ' /run/' /golem/mounts.list || [ "$CONTAINERS" = 1 ]; then
    mount -o remount,bind,ro "$root/run"
fi

# The box's processes, threads and memory (its tmpfs too), counted by the guest's own
# cgroup: the guest kernel's memory is on top of the box's, as a host kernel's is.
mkdir -p /sys/fs/cgroup
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup || fail "no cgroup2"
echo "+pids +memory" >/sys/fs/cgroup/cgroup.subtree_control || fail "no pids or memory cgroup"
mkdir /sys/fs/cgroup/box
echo "$PIDS" >/sys/fs/cgroup/box/pids.max || fail "cannot limit the box's pids"
echo "$MEMORY" >/sys/fs/cgroup/box/memory.max || fail "cannot limit the box's memory"
if [ "$CONTAINERS" = 1 ]; then
    # Under the box's limits: its own processes (shell), dockerd (engine) and containers.
    echo "+pids +memory" >/sys/fs/cgroup/box/cgroup.subtree_control &&
        mkdir /sys/fs/cgroup/box/shell /sys/fs/cgroup/box/engine /sys/fs/cgroup/box/containers ||
        fail "cannot make the engine's cgroups"
fi
# The box sees its own cgroup, read-only, as a container does: /sys/fs/cgroup.
if [ -d "$root/sys" ]; then
    mount -t tmpfs -o size=64k,mode=0755,nosuid,nodev,noexec sys "$root/sys" &&
        mkdir -p "$root/sys/fs/cgroup" &&
        mount --bind /sys/fs/cgroup/box "$root/sys/fs/cgroup" &&
        mount -o remount,bind,ro,nosuid,nodev,noexec "$root/sys/fs/cgroup" &&
        mount -o remount,ro "$root/sys" || fail "cannot show the box its cgroup"
fi

if [ "$CONTAINERS" = 1 ]; then
    for module in $(cat /golem/engine-modules.list); do
        insmod "/golem/modules/$module.ko" || fail "cannot load $module"
    done
    unshare -m --propagation private sh /golem/engine.sh &
fi
unshare -m -p -f --propagation private sh /golem/box.sh 3<>"$channel"
poweroff -f
