// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Repository is where, under a registry, the chart is pushed:
// helm install oci://<registry>/clustergate/charts/clustergate.
const Repository = "clustergate/charts"

// Published is a chart packaged and pushed.
type Published struct {
	// Archive is the packaged chart's path.
	Archive string
	// Tag is the OCI reference it was pushed to, Digest its digest.
	Tag    name.Tag
	Digest string
}

// Publish generates the chart from artifacts with o (Version required),
// lints it strictly, packages it into dir with helm and pushes it to
// oci://<registry>/clustergate/charts, over plain HTTP if plainHTTP.
// Helm's caches and logins stay in work.
func Publish(ctx context.Context, helm, kubectl, artifacts, dir, work, registry string, plainHTTP bool, o Options) (Published, error) {
	if o.Version == "" {
		return Published{}, fmt.Errorf("a published chart needs a version")
	}
	src := filepath.Join(work, "clustergate")
	if err := Generate(ctx, kubectl, artifacts, src, o); err != nil {
		return Published{}, err
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(work, "helm", "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(work, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(work, "helm", "data"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("lint", "--strict", src); err != nil {
		return Published{}, err
	}
	if err := run("package", src, "--destination", dir); err != nil {
		return Published{}, err
	}
	version := strings.TrimPrefix(o.Version, "v")
	archive := filepath.Join(dir, "clustergate-"+version+".tgz")
	push := []string{"push", archive, "oci://" + registry + "/" + Repository}
	if plainHTTP {
		push = append(push, "--plain-http")
	}
	if err := run(push...); err != nil {
		return Published{}, err
	}
	var opts []name.Option
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(registry+"/"+Repository+"/clustergate:"+version, opts...)
	if err != nil {
		return Published{}, err
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return Published{}, fmt.Errorf("the pushed chart %s: %w", tag, err)
	}
	return Published{Archive: archive, Tag: tag, Digest: desc.Digest.String()}, nil
}
