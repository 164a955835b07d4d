#!/bin/busybox sh
# The box's private container engine: dockerd as root of the guest (never of the host), in
# a mount namespace of its own over the box's root disk, started by golem's init when the
# box asks for containers. Its data lives on the box's own disk (/dev/vdb, a sparse file on
# the host that goes with the box); its socket is /run/docker.sock, the box's group's; it
# sees the box's /workspace and /tmp (bind mounts of `docker run -v` name the box's paths)
# and the guest's own devices, proc and cgroups. Containers get no network but the
# guest's loopback (--network host), where the box's egress proxy answers.
# It writes "ready" (or "failed") to /run/golem-engine.ready; the box's init waits for it.

export PATH=/bin
. /golem/params
root=/newroot
fail() {
    echo "golem-engine: $*"
    echo failed >"$root/run/golem-engine.ready"
    exit 1
}

exec </dev/null >/dev/console 2>&1
# init makes /run read-only for the box (this mount namespace's copy too, when it is late)
mount -o remount,bind,rw "$root/run" || fail "cannot write /run"
exec >>"$root/run/golem-engine.log" 2>&1
echo 0 >/sys/fs/cgroup/box/engine/cgroup.procs || fail "cannot join the engine's cgroup"
tries=0
until [ -b /dev/vdb ]; do
    tries=$((tries + 1))
    [ "$tries" -gt 3000 ] && fail "no engine disk"
    usleep 10000
done
mount -t ext4 -o nosuid,nodev,discard /dev/vdb "$root/var/lib/docker" || fail "cannot mount its disk"
mount -t devtmpfs devtmpfs "$root/dev" || fail "no /dev"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc" || fail "no /proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs "$root/sys" || fail "no /sys"
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup" || fail "no cgroup2"
# dockerd writes its identity key there (the root disk is read-only)
mount -t tmpfs -o size=1m,mode=0755,nosuid,nodev etc "$root/etc/docker" || fail "no /etc/docker"

# golem's base image: this initramfs's static busybox, imported once dockerd answers.
mount -t tmpfs -o size=16m,mode=0755 base "$root/mnt" || fail "no /mnt"
mkdir -p "$root/mnt/base/bin" "$root/mnt/base/tmp" && cp /bin/busybox "$root/mnt/base/bin/" ||
    fail "cannot lay out the base image"
for tool in $(/bin/busybox --list); do
    [ "$tool" = busybox ] || ln -s busybox "$root/mnt/base/bin/$tool"
done

proxy=""
[ -f "$root/run/golem/proxy" ] && proxy=$(cat "$root/run/golem/proxy")
cd "$root" && mount --move . / || fail "cannot move the root disk"
# No apostrophe in the script below: it is one single-quoted argument.
chroot . /usr/bin/env -i PATH="$BOX_PATH" LANG=C.UTF-8 \
    HTTP_PROXY="$proxy" HTTPS_PROXY="$proxy" NO_PROXY=localhost,127.0.0.1,::1 \
    BOX_GID="$BOX_GID" /bin/sh -c '
    fail() { echo "golem-engine: $*"; echo failed >/run/golem-engine.ready; exit 1; }
    # each phase with the guest uptime it ended at, for whoever reads the log
    stamp() { read -r up _ </proc/uptime; echo "golem-engine: at ${up} s: $*"; }
    stamp "starting containerd"
    [ -n "$HTTPS_PROXY" ] || unset HTTP_PROXY HTTPS_PROXY
    command -v curl >/dev/null || fail "no curl in the image: the engine is asked with it"
    # containerd first, waited for here: the one dockerd would start must answer within
    # 15 s, which a busy host under TCG does not always give it
    # (the CRI plugin of Kubernetes and the /opt one: slow to start, unused by dockerd).
    # Each daemon is waited for by its socket, and dockerd asked with curl: under TCG a Go
    # client (ctr, docker) takes about ten seconds of the guest CPU just to start.
    printf "version = 2\ndisabled_plugins = [\"%s\", \"%s\"]\n" \
        io.containerd.grpc.v1.cri io.containerd.internal.v1.opt >/run/containerd.toml
    containerd --config /run/containerd.toml --root /var/lib/docker/containerd \
        --state /run/docker/containerd/state --address /run/docker/containerd/containerd.sock &
    runtime=$!
    until [ -S /run/docker/containerd/containerd.sock ]; do  # made when it serves
        kill -0 "$runtime" 2>/dev/null || fail "containerd ended before it answered"
        sleep 0.05
    done
    stamp "containerd answers; starting dockerd"
    dockerd --containerd=/run/docker/containerd/containerd.sock \
        --host=unix:///run/docker.sock --data-root=/var/lib/docker \
        --exec-root=/run/docker --pidfile=/run/docker.pid --storage-driver=overlay2 \
        --bridge=none --iptables=false --ip6tables=false --ip-forward=false \
        --ip-masq=false --userland-proxy=true --exec-opt native.cgroupdriver=cgroupfs \
        --cgroup-parent=/box/containers &
    daemon=$!
    api() { curl -fsS --unix-socket /run/docker.sock "$@"; }
    until [ -S /run/docker.sock ] && api -o /dev/null http://engine/_ping 2>/dev/null; do
        kill -0 "$daemon" 2>/dev/null || fail "dockerd ended before it answered"
        sleep 0.05
    done
    stamp "dockerd answers; importing golem/busybox"
    # docker import through the API (its answer streams any error as JSON, with a 200)
    tar -C /mnt/base -c . | api -X POST -H "Content-Type: application/x-tar" --data-binary @- \
        "http://engine/images/create?fromSrc=-&repo=golem/busybox&tag=latest&changes=CMD%20%5B%22sh%22%5D" \
        >/run/golem-engine.import && ! grep -q errorDetail /run/golem-engine.import ||
        fail "cannot import golem/busybox: $(cat /run/golem-engine.import)"
    chgrp "$BOX_GID" /run/docker.sock && chmod 660 /run/docker.sock ||
        fail "cannot hand the socket to the box"
    stamp "ready"
    echo ready >/run/golem-engine.ready
    wait "$daemon"
    echo "golem-engine: dockerd ended with status $?"
'
# However the engine ended (a script or program that failed before saying so), the box's
# init is told, and does not wait for it any longer.
chroot . /bin/sh -c "[ -s /run/golem-engine.ready ] || echo failed >/run/golem-engine.ready"
