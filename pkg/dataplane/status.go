// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// statusResponder answers with a Status object, as kube-apiserver does, so
// that kubectl prints the reason.
type statusResponder struct {
	w http.ResponseWriter
}

// Object writes obj as JSON with the given code.
func (r statusResponder) Object(code int, obj runtime.Object) {
	r.w.Header().Set("Content-Type", "application/json")
	r.w.WriteHeader(code)
	if err := json.NewEncoder(r.w).Encode(obj); err != nil {
		klog.V(2).InfoS("Writing a data-plane answer failed", "err", err)
	}
}

// Error writes err as a Status; an error that is none is a 500.
func (r statusResponder) Error(err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	if d := s.Details; d != nil && d.RetryAfterSeconds > 0 {
		r.w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	r.Object(int(s.Code), &s)
}

// unauthorized is the answer to a request without a valid token; why it
// is invalid stays in the server's log, as in kube-apiserver.
func unauthorized(err error) error {
	if err != nil {
		klog.V(2).InfoS("Data-plane request not authenticated", "err", err)
	}
	return apierrors.NewUnauthorized("a valid bearer token of the session's owner is required")
}

func notFound(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("%q is not a session's path: the data plane serves %s<namespace>/<name>/<path on the target>", path, v1alpha1.DataPlanePathPrefix),
	}}
}
