// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// GetContainerLogs serves kubectl logs from the log file of the container's
// current run, or its previous one: with tail, a byte limit and follow
// (until the run ends or the client goes away).
func (pr *provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	c, err := pr.container(namespace, podName, containerName)
	if err != nil {
		return nil, err
	}
	var restarts int32
	var pid int
	c.pod.read(func() { restarts, pid = c.status.RestartCount, c.pid })
	if opts.Previous {
		if restarts == 0 {
			return nil, errdefs.InvalidInput("previous terminated container " + containerName + " not found")
		}
		restarts--
	}
	data, err := os.ReadFile(c.logPath(restarts))
	if err != nil {
		return nil, errdefs.NotFound("no log of container " + containerName + " yet")
	}
	if opts.Tail > 0 {
		data = tail(data, opts.Tail)
	}
	if opts.LimitBytes > 0 && len(data) > opts.LimitBytes {
		data = data[:opts.LimitBytes]
	}
	if !opts.Follow || opts.Previous || pid == 0 {
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	r, w := io.Pipe()
	go func() {
		_, err := w.Write(data)
		offset := int64(len(data))
		for err == nil {
			var more []byte
			if more, err = readFrom(c.logPath(restarts), offset); err != nil {
				break
			}
			if len(more) > 0 {
				offset += int64(len(more))
				_, err = w.Write(more)
				continue
			}
			var running bool
			c.pod.read(func() { running = c.pid == pid })
			if !running {
				break
			}
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		w.CloseWithError(err)
	}()
	return r, nil
}

// tail is the last n lines of data.
func tail(data []byte, n int) []byte {
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}

// readFrom reads a file from offset to its end.
func readFrom(path string, offset int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
