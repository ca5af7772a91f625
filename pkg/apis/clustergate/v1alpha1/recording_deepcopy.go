// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// deepcopy-gen takes time.Time for a struct of another package with a
// DeepCopyInto of its own, which it has not: the recording types that hold
// one copy themselves, and the generated code calls these. A time.Time is
// a value; its Location is shared and never changed.

// DeepCopyInto copies in into out.
func (in *RecordingInfo) DeepCopyInto(out *RecordingInfo) {
	*out = *in
	if in.Command != nil {
		out.Command = append([]string(nil), in.Command...)
	}
}

// DeepCopyInto copies in into out.
func (in *RecordingManifest) DeepCopyInto(out *RecordingManifest) {
	*out = *in
	if in.Moderators != nil {
		out.Moderators = append([]RecordingModerator(nil), in.Moderators...)
	}
}

// DeepCopyInto copies in into out.
func (in *RequestLogEntry) DeepCopyInto(out *RequestLogEntry) {
	*out = *in
	if in.Truncated != nil {
		out.Truncated = append([]TruncatedField(nil), in.Truncated...)
	}
	if in.Moderators != nil {
		out.Moderators = append([]RecordingModerator(nil), in.Moderators...)
	}
}

// DeepCopyInto copies in into out.
func (in *RecordingModerator) DeepCopyInto(out *RecordingModerator) {
	*out = *in
}
