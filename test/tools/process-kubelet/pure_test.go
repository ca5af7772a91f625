// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCommandLine(t *testing.T) {
	env := map[string]string{"A": "1"}
	for _, c := range []struct {
		name                                 string
		entrypoint, cmd, command, args, want []string
	}{
		{name: "image only", entrypoint: []string{"/e"}, cmd: []string{"c"}, want: []string{"/e", "c"}},
		{name: "args replace cmd", entrypoint: []string{"/e"}, cmd: []string{"c"}, args: []string{"a$(A)"}, want: []string{"/e", "a1"}},
		{name: "command drops cmd", entrypoint: []string{"/e"}, cmd: []string{"c"}, command: []string{"/x"}, want: []string{"/x"}},
		{name: "command and args", entrypoint: []string{"/e"}, command: []string{"/x"}, args: []string{"$$(A)", "$(B)"}, want: []string{"/x", "$(A)", "$(B)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := commandLine(c.entrypoint, c.cmd, c.command, c.args, env); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestShouldRestart(t *testing.T) {
	for _, c := range []struct {
		policy corev1.RestartPolicy
		code   int
		want   bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 1, true},
		{corev1.RestartPolicyNever, 1, false},
	} {
		if got := shouldRestart(c.policy, c.code); got != c.want {
			t.Errorf("%s, exit %d: restart %v, want %v", c.policy, c.code, got, c.want)
		}
	}
}

func TestTail(t *testing.T) {
	for _, c := range []struct {
		data string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\n", 5, "a\n"},
	} {
		if got := string(tail([]byte(c.data), c.n)); got != c.want {
			t.Errorf("tail(%q, %d) = %q, want %q", c.data, c.n, got, c.want)
		}
	}
}

func TestFieldValue(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", Labels: map[string]string{"b": "2", "a": "1"}}}
	for _, c := range []struct{ path, want string }{
		{"metadata.name", "p"},
		{"metadata.namespace", "n"},
		{"metadata.labels['a']", "1"},
		{"metadata.labels", "a=\"1\"\nb=\"2\""},
		{"status.podIP", "10.244.0.2"},
	} {
		got, err := fieldValue(pod, c.path, "10.244.0.2")
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.path, got, err, c.want)
		}
	}
}
