// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// newContainer pulls and unpacks a container's image into its own rootfs
// and plans its launch: command, environment, user, working directory and
// mounts.
func (p *podRuntime) newContainer(ctx context.Context, spec corev1.Container, etc []mountSpec) (*container, error) {
	start := time.Now()
	dir := filepath.Join(p.dir, "containers", spec.Name)
	rootfs := filepath.Join(dir, "rootfs")
	img, err := p.prov.images.pullAndUnpack(ctx, spec.Image, rootfs)
	if err != nil {
		return nil, err
	}
	p.logf("image %s of %s pulled and unpacked in %s", spec.Image, spec.Name, time.Since(start).Round(time.Millisecond))
	cfg := img.config.Config

	extra := []string{"HOSTNAME=" + p.hostname()}
	if port := p.prov.forwardPort; port != "" {
		// A name, not the gateway's address: the kube-apiserver's serving
		// certificate names kubernetes.default.svc (which the node's DNS
		// resolves to the gateway), not the gateway.
		extra = append(extra, "KUBERNETES_SERVICE_HOST=kubernetes.default.svc", "KUBERNETES_SERVICE_PORT="+port)
	}
	env, err := p.vols.containerEnv(ctx, &spec, cfg.Env, extra)
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		values[k] = v
	}
	argv := commandLine(cfg.Entrypoint, cfg.Cmd, spec.Command, spec.Args, values)

	uid, gid, err := imageUser(cfg.User, rootfs)
	if err != nil {
		return nil, err
	}
	var groups []uint32
	if sc := p.pod.Spec.SecurityContext; sc != nil {
		uid, gid = deref(sc.RunAsUser, uid), deref(sc.RunAsGroup, gid)
		for _, g := range sc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
		if sc.FSGroup != nil {
			groups = append(groups, uint32(*sc.FSGroup))
		}
	}
	if sc := spec.SecurityContext; sc != nil {
		uid, gid = deref(sc.RunAsUser, uid), deref(sc.RunAsGroup, gid)
		if sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && uid == 0 {
			return nil, fmt.Errorf("runAsNonRoot, but the container would run as root")
		}
	}
	if sc := p.pod.Spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && uid == 0 {
		return nil, fmt.Errorf("runAsNonRoot, but the container would run as root")
	}

	mounts := append([]mountSpec(nil), etc...)
	for _, m := range spec.VolumeMounts {
		src, ok := p.vols.paths[m.Name]
		if !ok {
			return nil, fmt.Errorf("no volume %q", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+m.SubPath))
		}
		mounts = append(mounts, mountSpec{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	workDir := spec.WorkingDir
	if workDir == "" {
		workDir = cfg.WorkingDir
	}
	return &container{
		pod:  p,
		spec: spec,
		launch: launchSpec{
			NetNS: p.sandbox.NetNSPath(), Hostname: p.hostname(), Rootfs: rootfs, Mounts: mounts,
			UID: uint32(uid), GID: uint32(gid), Groups: groups, Dir: workDir, Argv: argv, Env: env,
		},
		logDir: filepath.Join(p.dir, "logs", spec.Name),
		status: corev1.ContainerStatus{
			Name: spec.Name, Image: spec.Image, ImageID: img.id,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		},
		done: make(chan struct{}),
	}, nil
}

// commandLine is what a container runs: the pod's command replaces the
// image's entrypoint (and drops its cmd), the pod's args replace the cmd,
// with $(VAR) expanded in both.
func commandLine(entrypoint, cmd, command, args []string, env map[string]string) []string {
	argv := append([]string(nil), entrypoint...)
	tail := cmd
	if len(command) > 0 {
		argv, tail = nil, nil
		for _, c := range command {
			argv = append(argv, expand(c, env))
		}
	}
	if len(args) > 0 {
		tail = nil
		for _, a := range args {
			tail = append(tail, expand(a, env))
		}
	}
	return append(argv, tail...)
}

// deref is *v, or def.
func deref(v *int64, def int64) int64 {
	if v != nil {
		return *v
	}
	return def
}
