package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/devserver"
	"github.com/conclave-ai/conclave/worker"
)

// MinIOBinaryEnv names the MinIO server binary; default bin/minio in the
// working directory or a parent (where `make tools` puts it).
const MinIOBinaryEnv = "CONCLAVE_MINIO_BIN"

// env is everything a benchmark runs against: a Temporal dev server, a
// MinIO server, and (per measurement) a worker.
type env struct {
	temporal *devserver.Server
	client   client.Client
	minio    *exec.Cmd
	minioDir string
	s3URL    string // storage URL of a bucket on MinIO
	s3Env    []string
	store    storage.Store
}

func startEnv(ctx context.Context) (_ *env, err error) {
	e := &env{}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if err := e.startMinIO(ctx, wd); err != nil {
		return nil, err
	}
	bin, err := devserver.FindBinary(wd)
	if err != nil {
		return nil, err
	}
	e.temporal, err = devserver.Start(ctx, devserver.Config{Binary: bin, Headless: true})
	if err != nil {
		return nil, err
	}
	e.client, err = client.Dial(client.Options{HostPort: e.temporal.HostPort, Namespace: e.temporal.Namespace, Logger: quiet{}})
	if err != nil {
		return nil, fmt.Errorf("connect to the dev server: %w", err)
	}
	return e, nil
}

// startMinIO runs MinIO on a free loopback port with random credentials in
// a temporary directory, and points this process's S3 client at it.
func (e *env) startMinIO(ctx context.Context, wd string) error {
	bin, err := devserver.FindTool(wd, MinIOBinaryEnv, "minio", "MinIO")
	if err != nil {
		return err
	}
	if e.minioDir, err = os.MkdirTemp("", "conclave-bench-minio-"); err != nil {
		return err
	}
	user, pass := "bench"+randomHex(6), randomHex(16)
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		return err
	}
	console, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		return err
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "server", "--address", "127.0.0.1:"+strconv.Itoa(port),
		"--console-address", "127.0.0.1:"+strconv.Itoa(console), "--quiet", e.minioDir)
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+user, "MINIO_ROOT_PASSWORD="+pass, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.SysProcAttr = procAttr()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start MinIO: %w", err)
	}
	e.minio = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("MinIO did not start: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.s3Env = []string{"AWS_ACCESS_KEY_ID=" + user, "AWS_SECRET_ACCESS_KEY=" + pass, "AWS_SESSION_TOKEN="}
	for _, kv := range e.s3Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	q := url.Values{"endpoint": {endpoint}, "region": {"us-east-1"}, "create_bucket": {"true"}}
	e.s3URL = (&url.URL{Scheme: "s3", Host: "bench", Path: "/", RawQuery: q.Encode()}).String()
	e.store, err = storage.Open(ctx, e.s3URL)
	return err
}

func (e *env) close() {
	if e.client != nil {
		e.client.Close()
	}
	if e.temporal != nil {
		e.temporal.Stop()
	}
	if e.minio != nil && e.minio.Process != nil {
		_ = syscall.Kill(-e.minio.Process.Pid, syscall.SIGKILL)
		_ = e.minio.Wait()
	}
	if e.minioDir != "" {
		_ = os.RemoveAll(e.minioDir)
	}
}

// runningWorker is a worker for one measurement: a `conclave worker`
// process (so its memory is its own), or one inside this process.
type runningWorker struct {
	cmd *exec.Cmd
	in  sdkworker.Worker
}

// startWorker starts a worker with room for concurrency agent steps. With
// command empty it runs in this process (tests of this package).
func (e *env) startWorker(command []string, concurrency int) (*runningWorker, error) {
	if len(command) == 0 {
		w := worker.New(e.client, worker.Options{Store: e.store, Namespace: e.temporal.Namespace, Concurrency: concurrency})
		if err := w.Start(); err != nil {
			return nil, err
		}
		return &runningWorker{in: w}, nil
	}
	args := append(slices.Clone(command[1:]), "--address", e.temporal.HostPort, "--namespace", e.temporal.Namespace,
		"--storage", e.s3URL, "--concurrency", strconv.Itoa(concurrency))
	cmd := exec.Command(command[0], args...)
	// Payloads stay plain so the benchmark can read the history, whatever
	// the caller's environment says.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONCLAVE_CODEC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, e.s3Env...)
	cmd.SysProcAttr = procAttr()
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	// The worker says so once it polls.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "conclave worker: task queue") {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return nil, fmt.Errorf("the worker did not start:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &runningWorker{cmd: cmd}, nil
}

// peakRSS is the worker process's peak resident memory in MiB (Linux;
// this process's own when the worker runs inside it).
func (w *runningWorker) peakRSS() float64 {
	pid := os.Getpid()
	if w.cmd != nil {
		pid = w.cmd.Process.Pid
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func (w *runningWorker) stop() error {
	if w.in != nil {
		w.in.Stop()
		return nil
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil // stopped by the signal
		}
		return err
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		return <-done
	}
}

// syncBuffer is a bytes.Buffer a process writes while we read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// quiet keeps the SDK's logs out of the report; errors still show.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal error:", msg}, kv...)...)
}

var _ sdklog.Logger = quiet{}
