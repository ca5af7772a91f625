// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initCommand is the hidden first argument with which the node starts
// itself as a container's init: in a mount and UTS namespace of its own
// (clone flags), it joins the pod's network namespace, bind-mounts the
// volumes into the image's rootfs, chroots into it, drops to the
// container's user and execs the entrypoint. The mounts live in the
// private mount namespace only, so they vanish with the container's
// processes and the host never sees them.
const initCommand = "init-container"

// launchSpec is what the init needs, written by the node to a file.
type launchSpec struct {
	NetNS    string      `json:"netns"`
	Hostname string      `json:"hostname"`
	Rootfs   string      `json:"rootfs"`
	Mounts   []mountSpec `json:"mounts"`
	UID      uint32      `json:"uid"`
	GID      uint32      `json:"gid"`
	Groups   []uint32    `json:"groups,omitempty"`
	Dir      string      `json:"dir"`
	Argv     []string    `json:"argv"`
	Env      []string    `json:"env"`
}

// mountSpec binds Source of the host at Target inside the rootfs.
type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// initCmd is the command that runs spec's container; the caller sets its
// output and starts it.
func initCmd(specFile string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", initCommand, specFile)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd
}

// runInit is the container's init: it never returns; on failure it exits
// with 127, as a shell does for a command it cannot run.
func runInit(specFile string) {
	// Namespaces and the root belong to the thread that execs.
	runtime.LockOSThread()
	if err := initContainer(specFile); err != nil {
		fmt.Fprintf(os.Stderr, "process-kubelet: starting container: %v\n", err)
		os.Exit(127)
	}
}

// initContainer prepares the namespaces and execs the entrypoint.
func initContainer(specFile string) error {
	data, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var s launchSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	fd, err := unix.Open(s.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("joining %s: %w", s.NetNS, err)
	}
	_ = unix.Close(fd)
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return err
	}
	// Mounts below must not propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := mountDev(s.Rootfs); err != nil {
		return err
	}
	for _, m := range s.Mounts {
		if err := bindMount(s.Rootfs, m); err != nil {
			return err
		}
	}
	proc := filepath.Join(s.Rootfs, "proc")
	if err := os.MkdirAll(proc, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := unix.Chroot(s.Rootfs); err != nil {
		return err
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	groups := make([]int, 0, len(s.Groups))
	for _, g := range s.Groups {
		groups = append(groups, int(g))
	}
	// The syscall package applies these to every thread of the process.
	if err := syscall.Setgroups(groups); err != nil {
		return err
	}
	if err := syscall.Setgid(int(s.GID)); err != nil {
		return err
	}
	if err := syscall.Setuid(int(s.UID)); err != nil {
		return err
	}
	// Changing credentials cleared the parent-death signal.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return err
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("no command: the image has no entrypoint and the pod no command")
	}
	bin, err := lookPath(s.Argv[0], s.Env)
	if err != nil {
		return err
	}
	return unix.Exec(bin, s.Argv, s.Env)
}

// bindMount binds m.Source at m.Target below rootfs, creating the mount
// point as a directory or an empty file to match the source.
func bindMount(rootfs string, m mountSpec) error {
	target := filepath.Join(rootfs, filepath.Clean("/"+m.Target))
	info, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	// A symlink in the image (/etc/resolv.conf often is one) would be
	// followed on the host: the mount replaces it instead.
	if l, err := os.Lstat(target); err == nil && l.Mode()&os.ModeSymlink != 0 {
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	if info.IsDir() {
		err = os.MkdirAll(target, 0o755)
	} else if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// lookPath finds a command without a slash on the container's PATH, inside
// the new root.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		p := filepath.Join(dir, file)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found on PATH %s", file, pathEnv)
}

// mountDev gives the container a /dev of its own (a tmpfs, as runc does)
// with the host's harmless devices bound into it, so that nothing the
// container or its mounts create there reaches the host's /dev.
func mountDev(rootfs string) error {
	dev := filepath.Join(rootfs, "dev")
	if l, err := os.Lstat(dev); err == nil && l.Mode()&os.ModeSymlink != 0 {
		_ = os.Remove(dev)
	}
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindMount(rootfs, mountSpec{Source: "/dev/" + d, Target: "/dev/" + d}); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(dev, "shm"), 0o1777)
}
