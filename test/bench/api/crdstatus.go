// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
)

var benchSessions = schema.GroupVersionResource{Group: "bench.clustergate.dev", Version: "v1", Resource: "benchsessions"}

// crdStatusWriter gives CRD objects the status the controller wrote to the
// Sessions of the same names, by an update of each object as listed, as
// the controller updates its cached copy: the second write a Session
// costs, so that a row compares like with like.
type crdStatusWriter struct {
	sessions versioned.Interface
	crd      dynamic.NamespaceableResourceInterface
}

func newCRDStatusWriter(cfg *rest.Config) (*crdStatusWriter, error) {
	sessions, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &crdStatusWriter{sessions: sessions, crd: d.Resource(benchSessions)}, nil
}

// prepare returns the CRD objects from to to, each with the status of the
// Session named as the first: what the writes send, read before they are
// timed.
func (w *crdStatusWriter) prepare(ctx context.Context, from, to int) ([]*unstructured.Unstructured, error) {
	var status map[string]any
	name := fmt.Sprintf("s-%05d", from)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := w.sessions.ClustergateV1alpha1().Sessions(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(s.Status.Conditions) == 0 {
			return false, err
		}
		status, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&s.Status)
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("the status of Session %s: %w", name, err)
	}
	list, err := w.crd.Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	objects := make([]*unstructured.Unstructured, 0, to-from)
	for i := from; i < to; i++ {
		o, ok := byName[fmt.Sprintf("s-%05d", i)]
		if !ok {
			return nil, fmt.Errorf("CRD object s-%05d not listed", i)
		}
		o.Object["status"] = runtime.DeepCopyJSONValue(status)
		objects = append(objects, o)
	}
	return objects, nil
}

// write updates the status of each object.
func (w *crdStatusWriter) write(ctx context.Context, objects []*unstructured.Unstructured) error {
	return parallel(len(objects), func(i int) error {
		_, err := w.crd.Namespace(namespace).UpdateStatus(ctx, objects[i], metav1.UpdateOptions{})
		return err
	})
}
