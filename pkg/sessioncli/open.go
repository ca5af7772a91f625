// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

type openOptions struct {
	access, reason, owner, name, out string
	// namespaces scope the session to those namespaces of its target.
	namespaces   []string
	ttl, timeout time.Duration
	wait         bool
}

func newOpenCommand(g *globals) *cobra.Command {
	o := &openOptions{}
	cmd := &cobra.Command{
		Use:   "open shoot/[PROJECT/]NAME|cluster/NAME --access GROUP --ttl DURATION [--namespaces NS,...] [--reason TEXT] [--for USER] [--name NAME] [--wait] [--kubeconfig-out FILE]",
		Short: "Open a session and print its name; with --wait, wait until it is Ready and write its kubeconfig",
		Long: `Open a session to a target and print its name; with --wait, wait until it is Ready
and write its kubeconfig.

With --namespaces, the session reaches only those namespaces of the target, and its
kubeconfig starts in the first. Opening it needs, in the session's namespace, the access
level's verb on the whole target (kubectl auth can-i debugger shoots.clustergate.dev/prod)
or on TARGET/NAMESPACE for each of the namespaces
(kubectl auth can-i debugger shoots.clustergate.dev/prod/shop):
  kubectl session open shoot/prod --access debugger --ttl 1h --namespaces shop,shop-db -n demo
-n is the namespace of the session itself, on the control plane.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.session(args[0])
			if err != nil {
				return err
			}
			sessions, _, err := g.sessions()
			if err != nil {
				return err
			}
			created, err := sessions.Create(cmd.Context(), s, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.streams.Out, created.Name)
			if !o.wait {
				return nil
			}
			ready, err := g.waitReady(cmd.Context(), created, o.timeout, false)
			if err != nil || ready == nil {
				return err
			}
			out := o.out
			if out == "" {
				out = created.Name + ".kubeconfig"
			}
			if err := g.writeKubeconfig(cmd.Context(), ready, out); err != nil {
				return err
			}
			fmt.Fprintf(g.streams.ErrOut, "session %s is ready (%s); kubeconfig written to %s\n", ready.Name, expiry(ready), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.access, "access", "", "Access group of the session, such as viewer or admin.")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "Namespaces of the target the session reaches, such as shop,shop-db; the whole target when not set.")
	f.DurationVar(&o.ttl, "ttl", 0, "How long the session lasts, from its creation or approval, such as 1h.")
	f.StringVar(&o.reason, "reason", "", "Why: an incident or ticket.")
	f.StringVar(&o.owner, "for", "", "Open the session for this user (needs the verb assign).")
	f.StringVar(&o.name, "name", "", "Name of the session; generated when empty.")
	f.BoolVar(&o.wait, "wait", false, "Wait until the session is Ready and write its kubeconfig, or say that it waits for approval.")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "How long --wait waits.")
	f.StringVar(&o.out, "kubeconfig-out", "", "Where --wait writes the session's kubeconfig (default ./NAME.kubeconfig).")
	_ = cmd.MarkFlagRequired("access")
	_ = cmd.MarkFlagRequired("ttl")
	return cmd
}

// session builds the Session that open creates.
func (o *openOptions) session(target string) (*v1alpha1.Session, error) {
	t, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	s := &v1alpha1.Session{
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec: v1alpha1.SessionSpec{
			TTL: metav1.Duration{Duration: o.ttl}, Owner: v1alpha1.SessionOwner{Username: o.owner},
			AccessLevel: v1alpha1.AccessLevel{Group: o.access}, Target: t, Reason: o.reason,
		},
	}
	if len(o.namespaces) > 0 {
		s.Spec.Scope = &v1alpha1.SessionScope{Namespaces: o.namespaces}
	}
	if o.name == "" {
		s.GenerateName = "session-"
	}
	return s, nil
}

// parseTarget reads shoot/NAME, shoot/PROJECT/NAME (a Shoot of the
// Gardener project PROJECT) or cluster/NAME, as the TARGET column prints
// them.
func parseTarget(target string) (v1alpha1.SessionTarget, error) {
	kind, name, ok := strings.Cut(target, "/")
	project, shoot, inProject := strings.Cut(name, "/")
	switch {
	case !ok || name == "":
	case kind == "shoot" && !inProject:
		return v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: name}}, nil
	case kind == "shoot" && project != "" && shoot != "" && !strings.Contains(shoot, "/"):
		return v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: shoot, Project: project}}, nil
	case kind == "cluster":
		return v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: name}}}, nil
	}
	return v1alpha1.SessionTarget{}, fmt.Errorf("the target %q must be shoot/NAME, shoot/PROJECT/NAME or cluster/NAME", target)
}

// waitReady waits until the session is Ready and returns it, or returns
// nil when it waits for approval (unless throughApproval: then it waits for
// the approver too), or an error when it was denied, removed or not Ready
// in time.
func (g *globals) waitReady(ctx context.Context, s *v1alpha1.Session, timeout time.Duration, throughApproval bool) (*v1alpha1.Session, error) {
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	sessions := c.ClustergateV1alpha1().Sessions(s.Namespace)
	last := s
	var ready *v1alpha1.Session
	told := false
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := sessions.Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("session %s was removed: %s", s.Name, describeLast(last))
		}
		if err != nil {
			return false, err
		}
		last = got
		if n := len(got.Status.Approvals); n > 0 && got.Status.Approvals[n-1].Decision != v1alpha1.ApprovalApproved {
			if got.Status.Approvals[n-1].Decision == v1alpha1.ApprovalDenied {
				return false, fmt.Errorf("session %s: %s", s.Name, describeLast(got))
			}
			if !told {
				fmt.Fprintf(g.streams.ErrOut, "session %s waits for approval, %s, by %s: kubectl session approve %s -n %s\n",
					s.Name, progress(&got.Status.Approvals[n-1]), mayApprove(got), s.Name, s.Namespace)
				told = true
			}
			return !throughApproval, nil
		}
		if apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.SessionConditionReady) {
			if len(got.Status.Approvals) > 0 {
				fmt.Fprintf(g.streams.ErrOut, "session %s: %s\n", s.Name, describeLast(got))
			}
			ready = got
			return true, nil
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		why := "no Ready condition yet"
		if c := apimeta.FindStatusCondition(last.Status.Conditions, v1alpha1.SessionConditionReady); c != nil {
			why = c.Reason + ": " + c.Message
		}
		return nil, fmt.Errorf("session %s not Ready within %s: %s", s.Name, timeout, why)
	}
	return ready, err
}

// writeKubeconfig writes the session's kubeconfig to path. The server leaves
// its user empty when it has no exec plugin to hand out; the caller's own
// credentials fill it in only when the kubeconfig reaches the session's
// aggregated proxy on the caller's own API server, where they are used
// anyway. Anywhere else, the data plane in particular, they would go to an
// endpoint that the caller never gave them to, so nothing is written.
func (g *globals) writeKubeconfig(ctx context.Context, s *v1alpha1.Session, path string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	api := c.ClustergateV1alpha1().RESTClient()
	kc := &v1alpha1.SessionKubeconfig{}
	if err := api.Get().Namespace(s.Namespace).Resource("sessions").Name(s.Name).
		SubResource("kubeconfig").Do(ctx).Into(kc); err != nil {
		return err
	}
	cfg, err := clientcmd.Load(kc.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the session's kubeconfig: %w", err)
	}
	ctxt := cfg.Contexts[cfg.CurrentContext]
	if ctxt == nil || cfg.AuthInfos[ctxt.AuthInfo] == nil || cfg.Clusters[ctxt.Cluster] == nil {
		return errors.New("the session's kubeconfig has no current context")
	}
	// Only an empty user is left to the caller; one with an exec plugin, or
	// anything else the server put in, is kept as it is.
	if apiequality.Semantic.DeepEqual(*cfg.AuthInfos[ctxt.AuthInfo], clientcmdapi.AuthInfo{}) {
		// The URL this client would use for the proxy: the caller's API
		// server, with any path prefix of its kubeconfig.
		proxy := api.Get().Namespace(s.Namespace).Resource("sessions").Name(s.Name).SubResource("proxy").URL()
		if err := ownProxy(cfg.Clusters[ctxt.Cluster].Server, proxy); err != nil {
			return err
		}
		own, err := g.ownCredentials()
		if err != nil {
			return err
		}
		cfg.AuthInfos[ctxt.AuthInfo] = own
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writePrivateFile(path, data)
}

// ownProxy returns nil when server is proxy, the session's proxy on the
// caller's API server: same scheme, host in any case, port (443 or 80 when
// left out) and path. Otherwise it says why the caller's credentials are
// not sent to server.
func ownProxy(server string, proxy *url.URL) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("the session's kubeconfig has no valid server: %w", err)
	}
	own := proxy.Scheme + "://" + proxy.Host
	samePath := strings.TrimSuffix(u.EscapedPath(), "/") == proxy.EscapedPath()
	switch {
	case samePath && strings.EqualFold(u.Scheme, proxy.Scheme) && strings.EqualFold(u.Hostname(), proxy.Hostname()) && port(u) == port(proxy):
		return nil
	case samePath:
		return fmt.Errorf("the session's kubeconfig reaches its proxy through %s, not through the API server of your kubeconfig (%s), "+
			"and has no exec plugin: your credentials are not sent to another server and no kubeconfig was written; use a kubeconfig for %s",
			server, own, u.Scheme+"://"+u.Host)
	}
	return fmt.Errorf("the server hands out a data-plane kubeconfig (%s) without an exec plugin, and your credentials are only for your API server (%s): "+
		"they are not sent there and no kubeconfig was written; the server's operator must set --kubeconfig-exec-command", server, own)
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "http") {
		return "80"
	}
	return "443"
}

// writePrivateFile replaces path with a new file of mode 0600 holding data:
// written in full to a temporary file beside it and renamed over it, so that
// a reader never sees half a kubeconfig and an older file's looser mode does
// not survive. A symbolic link at path is refused rather than followed (it
// could point at any file of the caller's) or replaced (the caller may have
// meant the file it points at): which file gets credentials is the caller's
// to name. Anything else but a regular file is refused too, as a rename
// would replace a device or socket with the kubeconfig.
func writePrivateFile(path string, data []byte) (err error) {
	switch fi, statErr := os.Lstat(path); {
	case statErr == nil && fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: not writing the session's kubeconfig through it; name the file itself with --kubeconfig-out", path)
	case statErr == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: not writing the session's kubeconfig there", path)
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return statErr
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// CreateTemp makes it 0600 already; set before any byte goes in so that
	// the file never holds credentials under another mode.
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	// A rename replaces a symbolic link put at path since the check above
	// instead of following it.
	return os.Rename(f.Name(), path)
}

// ownCredentials returns the caller's user of the kubeconfig in use, with
// files inlined so that the written kubeconfig works from anywhere.
func (g *globals) ownCredentials() (*clientcmdapi.AuthInfo, error) {
	raw, err := g.flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	contextName := raw.CurrentContext
	if g.flags.Context != nil && *g.flags.Context != "" {
		contextName = *g.flags.Context
	}
	authName := ""
	if c := raw.Contexts[contextName]; c != nil {
		authName = c.AuthInfo
	}
	if g.flags.AuthInfoName != nil && *g.flags.AuthInfoName != "" {
		authName = *g.flags.AuthInfoName
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return nil, err
	}
	user := raw.AuthInfos[authName]
	if user == nil {
		return nil, fmt.Errorf("the kubeconfig in use has no user %q to reach the session with", authName)
	}
	return user, nil
}
