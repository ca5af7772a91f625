// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

// nameServer answers every connection with its name and a newline.
func nameServer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, name)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// through opens a connection through the balancer and returns the answer.
func through(t *testing.T, b *balancer) string {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", b.port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

func TestBalancer(t *testing.T) {
	b, err := newBalancer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	// A replica that does not answer is skipped.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	b.add(nameServer(t, "one"))
	b.add(deadAddr)
	b.add(nameServer(t, "two"))

	answers := func() []string {
		var got []string
		for range 4 {
			got = append(got, through(t, b))
		}
		return got
	}
	// The dead replica's turns go to the next one.
	if got, want := answers(), []string{"one\n", "two\n", "two\n", "one\n"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %q, want %q (each connection to the next replica that answers)", got, want)
	}
	// Once it is taken out (and added twice counts once), the live ones
	// take turns evenly.
	b.remove(deadAddr)
	b.add(b.backends[0])
	if got := answers(); got[0] == got[1] || got[1] == got[2] || got[2] == got[3] {
		t.Errorf("answers %q, want the two replicas in turn", got)
	}

	b.close()
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", b.port())); err == nil {
		c.Close()
		t.Error("the balancer still accepts connections after close")
	}
}
