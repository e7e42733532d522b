#!/bin/sh
# The test VM's second stage, process 1 on the host's root (read-only over 9p, under a writable
# overlay held in the VM's memory; see initramfs.ts). It sets up what a cgroup-v2 host has and this
# project's CI host lacks: one unified hierarchy at /sys/fs/cgroup with the cpu, memory and pids
# controllers handed down from the root (the kernel runs with cgroup_no_v1=all, so none is held by
# a v1 hierarchy). Then it runs the job the host wrote into the results share (/run/vm/job.sh),
# from a cgroup of its own as a service manager would start it (ci.slice/job.service), with its
# output in /run/vm/log and its exit code in /run/vm/rc, and powers the VM off.
# Loopback is the only network: the VM has no network device.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "vm: $*" >/dev/console; }
off() {
  sync
  echo 1 >/proc/sys/kernel/sysrq
  echo o >/proc/sysrq-trigger
  sleep 10
  exit 1 # process 1 ending: the kernel panics, and qemu (-no-reboot) ends
}

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts -o mode=620,ptmxmode=666 devpts /dev/pts
# /tmp and /var/tmp stay the overlay's (writable, in the VM's memory) rather than fresh tmpfs
# mounts: a checkout may live under /tmp, and a mount there would hide it from the job.
for d in /dev/shm /run; do mount -t tmpfs -o mode=1777 tmpfs "$d"; done
chmod 755 /run
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || say "no cgroup2 mount"
echo "+cpu +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control ||
  say "the root cgroup did not hand down cpu, memory and pids"
ip link set lo up
modprobe -a loop ext4 2>/dev/null
hostname sandbar-vm

mkdir -p /run/vm
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 results /run/vm; then
  say "no results share"
  off
fi
mkdir -p /sys/fs/cgroup/ci.slice/job.service
say "running the job"
sh -c 'echo $$ >/sys/fs/cgroup/ci.slice/job.service/cgroup.procs && exec sh /run/vm/job.sh' \
  </dev/null >/run/vm/log 2>&1
echo $? >/run/vm/rc
say "job ended with $(cat /run/vm/rc)"
umount /run/vm
off
