// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/generated/clientset/versioned"
	"github.com/clustergate/clustergate/pkg/proxy"
)

// lastUseWriter writes a session's status.lastUsedAt through the server's
// own API with a merge patch of the status subresource. The patch carries
// the resourceVersion the replica last saw, so that of the replicas that
// write at once only one gets through; the status strategy refuses a
// lastUsedAt that moves earlier or comes after the session ended.
func lastUseWriter(client versioned.Interface) proxy.LastUseWriter {
	return func(ctx context.Context, namespace, name, resourceVersion string, at time.Time) (string, error) {
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": resourceVersion},
			"status":   map[string]any{"lastUsedAt": metav1.NewTime(at)},
		})
		if err != nil {
			return "", err
		}
		s, err := client.ClustergateV1alpha1().Sessions(namespace).Patch(ctx, name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: proxy.LastUseFieldManager}, "status")
		if err != nil {
			return "", err
		}
		return s.ResourceVersion, nil
	}
}
