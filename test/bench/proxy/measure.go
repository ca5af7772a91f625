// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// latencies returns the p50 and p99 of n runs of each call, after a
// warm-up; the calls take turns.
func latencies(n int, calls []func() error) (p50, p99 []time.Duration) {
	samples := make([][]time.Duration, len(calls))
	for i := range n + 20 {
		for j := range calls {
			c := (i + j) % len(calls)
			start := time.Now()
			if err := calls[c](); err != nil {
				continue
			}
			if i >= 20 {
				samples[c] = append(samples[c], time.Since(start))
			}
		}
	}
	for _, s := range samples {
		slices.Sort(s)
		p50 = append(p50, s[len(s)/2].Round(time.Microsecond))
		p99 = append(p99, s[len(s)*99/100].Round(time.Microsecond))
	}
	return p50, p99
}

// createConfigMaps creates n ConfigMaps of about 100 bytes through c, 32 at
// a time.
func createConfigMaps(ctx context.Context, c kubernetes.Interface, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	names := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range names {
				_, err := c.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"k": strings.Repeat("v", 100)},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	return <-errs
}

// listRates returns the items per second of rounds LISTs on each path,
// after a warm-up; the paths take turns.
func listRates(ctx context.Context, paths []path, rounds int) []float64 {
	return rates(paths, rounds, func(c kubernetes.Interface) (int, error) {
		l, err := c.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	})
}

// rates returns what rounds calls on each path got per second (what each
// call returns: items, bytes), after a warm-up; the paths take turns.
func rates(paths []path, rounds int, call func(kubernetes.Interface) (int, error)) []float64 {
	got, spent := make([]int, len(paths)), make([]time.Duration, len(paths))
	for i := range rounds + 1 {
		for j := range paths {
			p := (i + j) % len(paths)
			start := time.Now()
			n, err := call(paths[p].client)
			if err == nil && i > 0 {
				got[p] += n
				spent[p] += time.Since(start)
			}
		}
	}
	perSecond := make([]float64, len(paths))
	for p := range paths {
		perSecond[p] = float64(got[p]) / spent[p].Seconds()
	}
	return perSecond
}

// watchLatencies is the median time, per path, from a ConfigMap's creation
// (written directly) to its ADDED event on a watch opened through the path;
// the watches of all paths are open at once.
func watchLatencies(ctx context.Context, paths []path, n int) ([]time.Duration, error) {
	writer := paths[targetDirect].client
	ns := "watch-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := writer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var watches []watch.Interface
	for _, p := range paths {
		w, err := p.client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	samples := make([][]time.Duration, len(paths))
	for i := range n {
		name := "w-" + strconv.Itoa(i)
		start := time.Now()
		if _, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		for p, w := range watches {
			wg.Go(func() {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Added && ev.Object.(*corev1.ConfigMap).Name == name {
						samples[p] = append(samples[p], time.Since(start))
						return
					}
				}
			})
		}
		wg.Wait()
	}
	var p50 []time.Duration
	for p, s := range samples {
		if len(s) < n {
			return nil, fmt.Errorf("the watch through %s ended early", paths[p].name)
		}
		slices.Sort(s)
		p50 = append(p50, s[len(s)/2].Round(time.Microsecond))
	}
	return p50, nil
}
