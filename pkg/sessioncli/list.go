// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package sessioncli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/clustergate/clustergate/pkg/apis/clustergate/v1alpha1"
)

// tableAccept asks the server for its own table of sessions or locks, the
// columns kubectl get shows.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

func newListCommand(g *globals) *cobra.Command {
	var all, pending bool
	output := printFlags("Session")
	cmd := &cobra.Command{
		Use:   "list [-A] [--pending] [-o json|yaml|name|wide|jsonpath=...|go-template=...|custom-columns=...]",
		Short: "List sessions, with their owner, target, expiry, and with -o wide their scope, approval and reason; READY says Locked while a lock holds one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				_ = output.EnsureWithNamespace() // never fails
			}
			// An unknown format is refused before anything else.
			printer, err := output.ToPrinter()
			if err != nil {
				return err
			}
			ns, err := g.namespace()
			if err != nil {
				return err
			}
			if all {
				ns = metav1.NamespaceAll
			}
			q := listQuery{resource: "sessions", namespace: ns}
			if pending {
				// The server selects them, so that an approver's list is as
				// cheap as the requests that wait.
				q.fieldSelector = v1alpha1.FieldPendingApproval + "!="
				q.pending = true
			}
			return g.printObjects(cmd.Context(), q, output, printer)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the sessions of every namespace.")
	cmd.Flags().BoolVar(&pending, "pending", false, "List only the sessions whose request to open or extend waits for an approver; the table says how many approvals are missing and who may give them.")
	output.AddFlags(cmd)
	return cmd
}

func newLocksCommand(g *globals) *cobra.Command {
	output := printFlags("SessionLock")
	cmd := &cobra.Command{
		Use:   "locks [-o json|yaml|name|wide|jsonpath=...|go-template=...|custom-columns=...]",
		Short: "List session locks, with what they match, their reason and expiry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printer, err := output.ToPrinter()
			if err != nil {
				return err
			}
			return g.printObjects(cmd.Context(), listQuery{resource: "sessionlocks"}, output, printer)
		},
	}
	output.AddFlags(cmd)
	return cmd
}

// printFlags are kubectl get's output flags and printers for a kind:
// cli-runtime's json, yaml, kyaml, name, jsonpath and go-template, with
// kubectl's custom-columns and tables (-o wide, --no-headers,
// --show-labels, -L, --show-kind).
func printFlags(kind string) *get.PrintFlags {
	output := get.NewGetPrintFlags()
	// kubectl get sorts the objects itself, not through its printers.
	output.HumanReadableFlags.SortBy = nil
	output.SetKind(v1alpha1.SchemeGroupVersion.WithKind(kind).GroupKind())
	return output
}

// printObjects prints the objects q names with printer, made from output.
func (g *globals) printObjects(ctx context.Context, q listQuery, output *get.PrintFlags, printer printers.ResourcePrinter) error {
	if tableFormat(output) {
		return g.printTable(ctx, q, printer)
	}
	return g.printList(ctx, q, printer)
}

// tableFormat tells whether the output is one of kubectl's tables, printed
// from the server's table rather than from the sessions: as kubectl get
// decides, no -o nor --template, or -o wide.
func tableFormat(output *get.PrintFlags) bool {
	format, template := *output.OutputFormat, *output.TemplateFlags.TemplateArgument
	return format == "" && template == "" || format == "wide"
}

// listQuery is which objects a list shows: the sessions (or session
// locks, which have no namespace) of a namespace, or of every namespace for
// "", that match a field selector if there is one.
type listQuery struct {
	resource, namespace, fieldSelector string
	// pending adds to a table of sessions the columns of pendingColumns.
	pending bool
}

// getObjects GETs the objects q names, in the representation accept asks
// for.
func (g *globals) getObjects(ctx context.Context, q listQuery, accept string) ([]byte, error) {
	c, err := g.client()
	if err != nil {
		return nil, err
	}
	req := c.ClustergateV1alpha1().RESTClient().Get().NamespaceIfScoped(q.namespace, q.namespace != "").Resource(q.resource)
	if q.fieldSelector != "" {
		req = req.Param("fieldSelector", q.fieldSelector)
	}
	if q.pending && accept == tableAccept {
		// The rows carry the sessions, whose approvals the added columns show.
		req = req.Param("includeObject", string(metav1.IncludeObject))
	}
	return doRaw(ctx, req.SetHeader("Accept", accept))
}

// printList prints the objects q names as kubectl get prints objects: as
// they are in JSON, each item carrying its kind, which the name printer
// needs.
func (g *globals) printList(ctx context.Context, q listQuery, printer printers.ResourcePrinter) error {
	raw, err := g.getObjects(ctx, q, runtime.ContentTypeJSON)
	if err != nil {
		return err
	}
	list, err := runtime.Decode(unstructured.UnstructuredJSONScheme, raw)
	if err != nil {
		return fmt.Errorf("reading the server's %s: %w", q.resource, err)
	}
	return printer.PrintObj(list, g.streams.Out)
}

// printTable prints the server's table of the objects q names.
func (g *globals) printTable(ctx context.Context, q listQuery, printer printers.ResourcePrinter) error {
	raw, err := g.getObjects(ctx, q, tableAccept)
	if err != nil {
		return err
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		return fmt.Errorf("reading the server's table: %w", err)
	}
	if q.pending {
		table.ColumnDefinitions = append(table.ColumnDefinitions, pendingColumns...)
		for i := range table.Rows {
			table.Rows[i].Cells = append(table.Rows[i].Cells, pendingCells(table.Rows[i].Object.Raw)...)
		}
	}
	// The printer finds each row's namespace and labels in its object.
	for i := range table.Rows {
		if r := table.Rows[i].Object.Raw; len(r) > 0 {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(r, &u.Object); err == nil {
				table.Rows[i].Object = runtime.RawExtension{Object: u}
			}
		}
	}
	if len(table.Rows) == 0 {
		_, err := fmt.Fprintf(g.streams.ErrOut, "No %s found.\n", q.resource)
		return err
	}
	// Reasons are anyone's text: escaped as kubectl does, and more.
	escapeCells(table)
	return printer.PrintObj(table, g.streams.Out)
}
