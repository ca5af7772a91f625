// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// lockOptions are the flags of `kubectl session lock`.
type lockOptions struct {
	user, group, target, namespace, reason, name string
	// dataPlaneUsers are the person's names on the data plane, with their
	// issuer's prefix.
	dataPlaneUsers []string
	ttl            time.Duration
}

func newLockCommand(g *globals) *cobra.Command {
	o := &lockOptions{}
	cmd := &cobra.Command{
		Use: "lock [--user USER] [--dataplane-user NAME]... [--group GROUP] [--target shoot/[PROJECT/]NAME|cluster/NAME] [--namespace NS] " +
			"--reason TEXT [--ttl DURATION] [--name NAME]",
		Short: "Lock the sessions that match, all that is given, and print the lock's name",
		Long: `A SessionLock freezes the sessions it matches: while it is in force, they cannot be
opened or extended, and every request and stream through them ends within a second.
The sessions stay (Ready shows Locked) and work again once the lock is removed
(kubectl session unlock NAME) or expires (--ttl). Give at least one of --user,
--dataplane-user, --group, --target and --namespace; all that are given must match.

A person has a name in each identity space: --user is their garden user name, and
sessions opened for them on the data plane are owned by their data-plane name, which
carries the issuer's prefix (such as dataplane:alice@example.com, as in the session's
spec.owner.username). Give both to lock the person's sessions in both spaces. --group
holds the owner's groups as the session recorded them and the requester's groups now.
A lock on a Shoot target that names no user or group also stops the kubeconfigs
that GardenerClusterKubeconfigs keep for it from being written, rotated or forced.
What the lock holds is printed to stderr; stdout has the lock's name alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := o.lock(time.Now())
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			created, err := c.ClustergateV1alpha1().SessionLocks().Create(cmd.Context(), l, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.streams.Out, created.Name)
			o.describe(g.streams.ErrOut, created.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.user, "user", "", "Lock the sessions of this owner, by garden user name, and requests by them.")
	cmd.Flags().StringArrayVar(&o.dataPlaneUsers, "dataplane-user", nil,
		"Lock the sessions of this data-plane owner too, by the name with its issuer's prefix (dataplane:...), as one person with --user; repeatable.")
	cmd.Flags().StringVar(&o.group, "group", "", "Lock the sessions whose owner is in this group.")
	cmd.Flags().StringVar(&o.target, "target", "", "Lock the sessions to this target: shoot/NAME (in every project), shoot/PROJECT/NAME or cluster/NAME.")
	// Locks are cluster-scoped: here -n/--namespace is the namespace of
	// the sessions to lock, not kubectl's namespace of the request.
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "Lock the sessions in this namespace.")
	cmd.Flags().StringVar(&o.reason, "reason", "", "Why, such as the incident; required, shown in every refusal.")
	cmd.Flags().DurationVar(&o.ttl, "ttl", 0, "Lift the lock after this long; 0 holds it until unlocked.")
	cmd.Flags().StringVar(&o.name, "name", "", "The lock's name; generated (lock-...) when empty.")
	return cmd
}

// lock returns the SessionLock the options ask for at now. The server
// validates it; only what the flags cannot say is checked here.
func (o *lockOptions) lock(now time.Time) (*v1alpha1.SessionLock, error) {
	l := &v1alpha1.SessionLock{
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec:       v1alpha1.SessionLockSpec{User: o.user, Users: o.dataPlaneUsers, Group: o.group, Namespace: o.namespace, Reason: o.reason},
	}
	if o.name == "" {
		l.GenerateName = "lock-"
	}
	if o.target != "" {
		t, err := parseTarget(o.target)
		if err != nil {
			return nil, err
		}
		l.Spec.Target = &v1alpha1.SessionLockTarget{Shoot: t.Shoot}
		if t.Cluster != nil {
			l.Spec.Target.Cluster = &t.Cluster.KubeconfigSecretRef
		}
	}
	switch {
	case o.ttl < 0:
		return nil, errors.New("--ttl must not be negative")
	case o.ttl > 0:
		l.Spec.ExpiresAt = &metav1.Time{Time: now.Add(o.ttl).Truncate(time.Second)}
	}
	return l, nil
}

// describe says which identity spaces the lock named name holds, so that
// whoever locks a person by one name learns that the other is not held.
func (o *lockOptions) describe(w io.Writer, name string) {
	if o.user != "" {
		fmt.Fprintf(w, "%s locks garden user %s\n", name, o.user)
	}
	for _, u := range o.dataPlaneUsers {
		fmt.Fprintf(w, "%s locks data-plane user %s\n", name, u)
	}
	switch {
	case o.user != "" && len(o.dataPlaneUsers) == 0:
		fmt.Fprintf(w, "%s does not lock %s's sessions on the data plane, owned by their data-plane name (dataplane:...): "+
			"name it with --dataplane-user too, or add it to spec.users\n", name, o.user)
	case o.user == "" && len(o.dataPlaneUsers) > 0:
		fmt.Fprintf(w, "%s does not lock this person's sessions by their garden name: name it with --user too, or set spec.user\n", name)
	}
	if o.group != "" {
		fmt.Fprintf(w, "%s locks group %s: owners recorded in it, and requesters in it now\n", name, o.group)
	}
}

func newUnlockCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unlock NAME...",
		Short: "Remove session locks: the sessions they held work again",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			for _, name := range args {
				if err := c.ClustergateV1alpha1().SessionLocks().Delete(cmd.Context(), name, metav1.DeleteOptions{}); err != nil {
					return err
				}
				fmt.Fprintf(g.streams.Out, "sessionlock %s removed\n", name)
			}
			return nil
		},
	}
}
