// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command podserver is the workload of the process node's test: an HTTP
// server that shows what its container got (env, args, files, user) and
// fails its liveness endpoint on request, to test restarts.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", ":8080", "address")
	failAfter := flag.Duration("fail-liveness-after", 0, "fail /livez after this long; 0: never")
	termDelay := flag.Duration("term-delay", 0, "wait this long after SIGTERM before exiting")
	exitAfter := flag.Duration("exit-after", 0, "exit with --exit-code after this long; 0: never")
	exitCode := flag.Int("exit-code", 0, "exit code of --exit-after")
	flag.Parse()
	if *exitAfter > 0 {
		time.AfterFunc(*exitAfter, func() {
			fmt.Printf("exiting with %d\n", *exitCode)
			os.Exit(*exitCode)
		})
	}
	start := time.Now()
	host, _ := os.Hostname()
	fmt.Printf("podserver started on %s as %d:%d, args %q\n", host, os.Getuid(), os.Getgid(), os.Args[1:])
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		if *failAfter > 0 && time.Since(start) > *failAfter {
			http.Error(w, "failing on purpose", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
		wd, _ := os.Getwd()
		_ = json.NewEncoder(w).Encode(map[string]any{
			"env": os.Environ(), "args": os.Args[1:], "uid": os.Getuid(), "gid": os.Getgid(),
			"groups": must(os.Getgroups()), "cwd": wd, "hostname": host,
		})
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		if err := os.WriteFile(r.URL.Query().Get("path"), []byte(r.URL.Query().Get("data")), 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("/lookup", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.LookupHost(r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		slices.Sort(addrs)
		fmt.Fprint(w, strings.Join(addrs, " "))
	})
	// /whoami asks the kube-apiserver who the pod's service-account token
	// is, as an in-cluster client does: KUBERNETES_SERVICE_HOST and _PORT,
	// the mounted token and CA.
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, _ *http.Request) {
		body, err := whoami()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = w.Write(body)
	})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		fmt.Printf("SIGTERM received, exiting in %s\n", *termDelay)
		time.Sleep(*termDelay)
		os.Exit(0)
	}()
	if err := http.ListenAndServe(*listen, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func must[T any](v T, _ error) T { return v }

// whoami posts a SelfSubjectReview with the pod's token.
func whoami() ([]byte, error) {
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(dir + "token")
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(dir + "ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) +
		"/apis/authentication.k8s.io/v1/selfsubjectreviews"
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(token))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusCreated {
		err = fmt.Errorf("%s: %s", resp.Status, body)
	}
	return body, err
}
