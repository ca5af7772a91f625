// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package intern

import (
	"fmt"
	goruntime "runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clustergate/clustergate/pkg/apis/clustergate"
	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// fresh returns a copy of s in its own memory, as a decoder makes it.
func fresh(s string) string { return string([]byte(s)) }

func session(name string) *v1alpha1.Session {
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: fresh(name), Namespace: fresh("sre"), UID: "uid-" + "1",
			Finalizers:      []string{fresh(v1alpha1.SessionFinalizer)},
			Labels:          map[string]string{fresh("team"): fresh("sre")},
			Annotations:     map[string]string{fresh("clustergate.dev/note"): fresh("x")},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: fresh("kubectl-create"), Operation: metav1.ManagedFieldsOperationType(fresh("Update")), APIVersion: fresh("clustergate.dev/v1alpha1"), FieldsType: fresh("FieldsV1")}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("v1"), Kind: fresh("ConfigMap"), Name: fresh("owner")}},
		},
		Status: v1alpha1.SessionStatus{Conditions: []metav1.Condition{{Type: fresh("Ready"), Reason: fresh("TargetNotFound"), Message: fresh("kubeconfig Secret x not found")}}},
	}
}

// same tells whether two strings share their bytes.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestObject: the repeating strings of two objects share memory after
// interning, the unique ones do not, and nothing changes in value.
func TestObject(t *testing.T) {
	a, b := session("a"), session("b")
	want := a.DeepCopy()
	Object(a)
	Object(b)
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("interning changed the object (-want +got):\n%s", diff)
	}
	shared := []struct {
		field string
		a, b  string
	}{
		{"namespace", a.Namespace, b.Namespace},
		{"finalizer", a.Finalizers[0], b.Finalizers[0]},
		{"managedFields manager", a.ManagedFields[0].Manager, b.ManagedFields[0].Manager},
		{"managedFields operation", string(a.ManagedFields[0].Operation), string(b.ManagedFields[0].Operation)},
		{"managedFields apiVersion", a.ManagedFields[0].APIVersion, b.ManagedFields[0].APIVersion},
		{"managedFields fieldsType", a.ManagedFields[0].FieldsType, b.ManagedFields[0].FieldsType},
		{"owner apiVersion", a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
		{"owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		{"condition type", a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
		{"condition reason", a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		{"condition message", a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	}
	for _, s := range shared {
		if !same(s.a, s.b) {
			t.Errorf("%s: not shared", s.field)
		}
	}
	// Map keys are read back from the maps: only what the map holds counts.
	for _, m := range []struct {
		field string
		a, b  map[string]string
	}{{"label key", a.Labels, b.Labels}, {"annotation key", a.Annotations, b.Annotations}} {
		for k := range m.a {
			for l := range m.b {
				if !same(k, l) {
					t.Errorf("%s: not shared", m.field)
				}
			}
		}
	}
	// Unique to an object, or not worth a table entry: left as decoded.
	if same(a.OwnerReferences[0].Name, b.OwnerReferences[0].Name) {
		t.Errorf("owner name: interned")
	}
	if same(a.Labels["team"], b.Labels["team"]) {
		t.Errorf("label value: interned")
	}
}

// TestObjectOfOtherKinds: kinds without conditions, and values that are
// not objects with metadata, are handled without harm.
func TestObjectOfOtherKinds(t *testing.T) {
	for _, obj := range []runtime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fresh("ns")}},
		&corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "Ready"}}}},
		&metav1.Status{Message: "x"},
		&v1alpha1.SessionList{},
	} {
		want := obj.DeepCopyObject()
		Object(obj)
		if diff := cmp.Diff(want, obj); diff != "" {
			t.Errorf("%T changed (-want +got):\n%s", obj, diff)
		}
	}
}

// storageCodec is a codec as the storage's: v1alpha1 in mediaType on the
// wire, the internal version in memory.
func storageCodec(tb testing.TB, mediaType string) runtime.Codec {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	if err := clustergate.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	return codecs.CodecForVersions(info.Serializer, info.Serializer, v1alpha1.SchemeGroupVersion, clustergate.SchemeGroupVersion)
}

// TestCodec: the codec's decoded objects come out interned, as the storage
// decodes them: into the internal version.
func TestCodec(t *testing.T) {
	codec := Codec{Codec: storageCodec(t, runtime.ContentTypeJSON)}
	data, err := runtime.Encode(codec, session("a"))
	if err != nil {
		t.Fatal(err)
	}
	var got [2]*clustergate.Session
	for i := range got {
		obj, err := runtime.Decode(codec, data)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = obj.(*clustergate.Session)
	}
	if got[0].Name != "a" || got[0].Status.Conditions[0].Message != "kubeconfig Secret x not found" {
		t.Fatalf("decoded %+v", got[0])
	}
	if !same(got[0].Status.Conditions[0].Message, got[1].Status.Conditions[0].Message) || !same(got[0].Namespace, got[1].Namespace) {
		t.Error("two decodes of one object do not share their repeating strings")
	}
}

func fieldsV1(raw string) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawString(raw)
	return f
}

// storedSession is a Session as the storage holds one after the
// controller's first status write, for a target whose Secret is missing
// (as make bench-api creates them).
func storedSession(i int) runtime.Object {
	created := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	expires := metav1.NewTime(created.Add(time.Hour))
	notFound := "kubeconfig Secret clustergate-system/missing not found; a cluster target is a Secret there labelled clustergate.dev/cluster-target=true"
	return &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%05d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("0b6f3c2e-%04d-4c8e-9d4a-5f1e2d3c4b5a", i)),
			ResourceVersion: fmt.Sprint(100000 + i), Generation: 1, CreationTimestamp: created, Finalizers: []string{v1alpha1.SessionFinalizer},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "clustergate.dev/v1alpha1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: fieldsV1(`{"f:spec":{".":{},"f:accessLevel":{".":{},"f:group":{}},"f:target":{".":{},"f:cluster":{".":{},"f:kubeconfigSecretRef":{".":{},"f:name":{}}}},"f:ttl":{}}}`)},
				{Manager: "clustergate-session-controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "clustergate.dev/v1alpha1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1:    fieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"AuthorizationPolicyReady\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"CredentialsReady\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`),
					Subresource: "status"},
			}},
		Spec: v1alpha1.SessionSpec{TTL: metav1.Duration{Duration: time.Hour}, Owner: v1alpha1.SessionOwner{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}},
			AccessLevel: v1alpha1.AccessLevel{Group: "viewer"},
			Target:      v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: "missing"}, SignerName: "kubernetes.io/kube-apiserver-client"}}},
		Status: v1alpha1.SessionStatus{ExpiresAt: &expires, ObservedGeneration: 1, Conditions: []metav1.Condition{
			{Type: "CredentialsReady", Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: created, Reason: "TargetNotFound", Message: notFound},
			{Type: "AuthorizationPolicyReady", Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: created, Reason: "IstioNotInstalled",
				Message: "Istio's AuthorizationPolicy API is not served; the session works through the aggregated proxy only"},
			{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: created, Reason: "TargetNotFound", Message: notFound},
		}},
	}
}

// storedKubeconfig is a GardenerClusterKubeconfig whose Ready message, like
// the controller's, is its own: interning it only costs.
func storedKubeconfig(i int) runtime.Object {
	synced := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	expires := metav1.NewTime(synced.Add(10 * time.Minute))
	name := fmt.Sprintf("k-%05d", i)
	return &v1alpha1.GardenerClusterKubeconfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", UID: types.UID(fmt.Sprintf("7d1e9a40-%04d-4f0b-8c2d-1a2b3c4d5e6f", i)),
			ResourceVersion: fmt.Sprint(200000 + i), Generation: 1, CreationTimestamp: synced, Finalizers: []string{"clustergate.dev/kubeconfig-secret"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "clustergate-bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "clustergate.dev/v1alpha1", Time: &synced, FieldsType: "FieldsV1",
					FieldsV1: fieldsV1(`{"f:spec":{".":{},"f:kubeconfig":{".":{},"f:secret":{".":{},"f:key":{},"f:name":{}}},"f:shoot":{".":{},"f:name":{}}}}`)},
				{Manager: "clustergate-kubeconfig-controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "clustergate.dev/v1alpha1", Time: &synced, FieldsType: "FieldsV1",
					FieldsV1:    fieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"KubeconfigReady\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:expirationTime":{},"f:lastSyncTime":{},"f:observedGeneration":{},"f:state":{}}}`),
					Subresource: "status"},
			}},
		Spec: v1alpha1.GardenerClusterKubeconfigSpec{Shoot: v1alpha1.ShootReference{Name: "local"},
			Kubeconfig: v1alpha1.KubeconfigTarget{Secret: v1alpha1.SecretKeyReference{Name: "kubeconfig-" + name, Key: "config"}}},
		Status: v1alpha1.GardenerClusterKubeconfigStatus{State: "Ready", LastSyncTime: &synced, ExpirationTime: &expires, ObservedGeneration: 1, Conditions: []metav1.Condition{
			{Type: "KubeconfigReady", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: synced, Reason: "Rotated",
				Message: fmt.Sprintf("Secret kubeconfig-%s holds a kubeconfig valid until %s", name, expires.UTC().Format(time.RFC3339))}}},
	}
}

// BenchmarkRetained reports the heap that 10,000 objects decoded by the
// storage codec keep, per object, with and without interning: what the
// watch cache holds of each.
func BenchmarkRetained(b *testing.B) {
	storage := storageCodec(b, runtime.ContentTypeProtobuf)
	heap := func() uint64 {
		var m goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 10000
	for _, kind := range []struct {
		name   string
		object func(int) runtime.Object
	}{{"Session", storedSession}, {"GardenerClusterKubeconfig", storedKubeconfig}} {
		data := make([][]byte, n)
		for i := range data {
			var err error
			if data[i], err = runtime.Encode(storage, kind.object(i)); err != nil {
				b.Fatal(err)
			}
		}
		for _, codec := range []struct {
			name  string
			codec runtime.Codec
		}{{"decoded", storage}, {"interned", Codec{Codec: storage}}} {
			b.Run(kind.name+"/"+codec.name, func(b *testing.B) {
				for b.Loop() {
					objs := make([]runtime.Object, n)
					before := heap()
					for i := range objs {
						var err error
						if objs[i], err = runtime.Decode(codec.codec, data[i]); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(heap()-before)/n, "retained-B/object")
					goruntime.KeepAlive(objs)
				}
			})
		}
	}
}
