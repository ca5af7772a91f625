// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerEnv resolves a container's environment: the image's, then
// envFrom, then env with $(VAR) references expanded, as the kubelet does.
// The node resolves it itself (virtual-kubelet's resolution is switched
// off) because it knows the pod's address, which status.podIP needs.
func (v *volumes) containerEnv(ctx context.Context, c *corev1.Container, imageEnv, extra []string) ([]string, error) {
	var order []string
	values := map[string]string{}
	set := func(k, val string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = val
	}
	for _, kv := range append(imageEnv, extra...) {
		k, val, _ := strings.Cut(kv, "=")
		set(k, val)
	}
	for _, from := range c.EnvFrom {
		data := map[string]string{}
		switch {
		case from.ConfigMapRef != nil:
			cm, err := v.client.CoreV1().ConfigMaps(v.pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil && (!apierrors.IsNotFound(err) || !isTrue(from.ConfigMapRef.Optional)) {
				return nil, err
			}
			if cm != nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			s, err := v.client.CoreV1().Secrets(v.pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil && (!apierrors.IsNotFound(err) || !isTrue(from.SecretRef.Optional)) {
				return nil, err
			}
			if s != nil {
				for k, b := range s.Data {
					data[k] = string(b)
				}
			}
		}
		for k, val := range data {
			set(from.Prefix+k, val)
		}
	}
	for _, e := range c.Env {
		val, err := v.envValue(ctx, e, values)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		set(e.Name, val)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+values[k])
	}
	return env, nil
}

// envValue is one env entry's value.
func (v *volumes) envValue(ctx context.Context, e corev1.EnvVar, values map[string]string) (string, error) {
	if e.ValueFrom == nil {
		return expand(e.Value, values), nil
	}
	from := e.ValueFrom
	switch {
	case from.FieldRef != nil:
		return fieldValue(v.pod, from.FieldRef.FieldPath, v.podIP)
	case from.ResourceFieldRef != nil:
		return resourceValue(v.pod, from.ResourceFieldRef)
	case from.ConfigMapKeyRef != nil:
		r := from.ConfigMapKeyRef
		cm, err := v.client.CoreV1().ConfigMaps(v.pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(r.Optional) {
				return "", nil
			}
			return "", err
		}
		return cm.Data[r.Key], nil
	case from.SecretKeyRef != nil:
		r := from.SecretKeyRef
		s, err := v.client.CoreV1().Secrets(v.pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(r.Optional) {
				return "", nil
			}
			return "", err
		}
		return string(s.Data[r.Key]), nil
	}
	return "", fmt.Errorf("unsupported valueFrom")
}

// expand replaces $(VAR) with VAR's value when it is defined, and $$ with
// $, as Kubernetes expands env, command and args.
func expand(s string, values map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i:], ')'); end > 0 {
				name := s[i+2 : i+end]
				if val, ok := values[name]; ok {
					b.WriteString(val)
					i += end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isTrue reads an optional flag.
func isTrue(b *bool) bool { return b != nil && *b }
