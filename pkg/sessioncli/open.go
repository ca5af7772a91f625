package sessioncli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
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
	ttl, timeout                     time.Duration
	wait                             bool
}

func newOpenCommand(g *globals) *cobra.Command {
	o := &openOptions{}
	cmd := &cobra.Command{
		Use:   "open shoot/NAME|cluster/NAME --access GROUP --ttl DURATION [--reason TEXT] [--for USER] [--name NAME] [--wait] [--kubeconfig-out FILE]",
		Short: "Open a session and print its name; with --wait, wait until it is Ready and write its kubeconfig",
		Args:  cobra.ExactArgs(1),
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
	if o.name == "" {
		s.GenerateName = "session-"
	}
	return s, nil
}

// parseTarget reads shoot/NAME or cluster/NAME.
func parseTarget(target string) (v1alpha1.SessionTarget, error) {
	kind, name, ok := strings.Cut(target, "/")
	switch {
	case !ok || name == "":
	case kind == "shoot":
		return v1alpha1.SessionTarget{Shoot: &v1alpha1.ShootReference{Name: name}}, nil
	case kind == "cluster":
		return v1alpha1.SessionTarget{Cluster: &v1alpha1.ClusterTarget{KubeconfigSecretRef: v1alpha1.LocalSecretReference{Name: name}}}, nil
	}
	return v1alpha1.SessionTarget{}, fmt.Errorf("the target %q must be shoot/NAME or cluster/NAME", target)
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
				fmt.Fprintf(g.streams.ErrOut, "session %s waits for approval by a user with the verb approve on sessions: kubectl session approve %s -n %s\n",
					s.Name, s.Name, s.Namespace)
				told = true
			}
			return !throughApproval, nil
		}
		if apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.SessionConditionReady) {
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

// writeKubeconfig writes the session's kubeconfig to path. When the server
// leaves its user empty (no exec plugin configured), the caller's own
// credentials fill it in: the proxy path is reached through the aggregated
// API as the caller.
func (g *globals) writeKubeconfig(ctx context.Context, s *v1alpha1.Session, path string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	kc := &v1alpha1.SessionKubeconfig{}
	if err := c.ClustergateV1alpha1().RESTClient().Get().Namespace(s.Namespace).Resource("sessions").Name(s.Name).
		SubResource("kubeconfig").Do(ctx).Into(kc); err != nil {
		return err
	}
	cfg, err := clientcmd.Load(kc.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the session's kubeconfig: %w", err)
	}
	ctxt := cfg.Contexts[cfg.CurrentContext]
	if ctxt == nil || cfg.AuthInfos[ctxt.AuthInfo] == nil {
		return errors.New("the session's kubeconfig has no current context")
	}
	if user := cfg.AuthInfos[ctxt.AuthInfo]; user.Exec == nil {
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
	return os.WriteFile(path, data, 0o600)
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
