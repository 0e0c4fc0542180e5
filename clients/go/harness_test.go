package baton_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A live Baton for the package's tests: target/debug/baton (or $TEST_BATON_BIN) with its own
// embedded redis-server in a temporary data dir, on free loopback ports; SIGTERM after.
var server struct {
	addr        string
	metricsPort int
	conn        *grpc.ClientConn
}

// freePorts returns two distinct free loopback ports (gRPC, metrics): both listeners are open
// at once, so the kernel cannot hand out the same port twice.
func freePorts() (int, int) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1]
}

func TestMain(m *testing.M) {
	os.Exit(runWithBaton(m))
}

// quickEnv is the package Baton's configuration, for the claim and subscriber tests: unacked
// messages come back after 0.5 s, a pool's line holds one waiting claim, and a full line hints a
// 250 ms pushback. The worker and leadership tests do not depend on these.
var quickEnv = []string{
	"BATON_SCHEDULE__ACK_TIMEOUT_MS=500",
	"BATON_POOL__MAX_LINE=1",
	"BATON_POOL__FULL_LINE_PUSHBACK_MS=250",
}

// batonProc is one Baton process with its own data dir and ports.
type batonProc struct {
	binary, dataDir, addr string
	metricsPort           int
	env                   []string
	cmd                   *exec.Cmd
	log                   *os.File
}

// batonBinary is target/debug/baton, or $TEST_BATON_BIN.
func batonBinary() (string, error) {
	binary := os.Getenv("TEST_BATON_BIN")
	if binary == "" {
		binary, _ = filepath.Abs(filepath.Join("..", "..", "target", "debug", "baton"))
	}
	if _, err := os.Stat(binary); err != nil {
		return "", fmt.Errorf("%s is missing: build it with `cargo build --bin baton`", binary)
	}
	return binary, nil
}

func startBaton(env []string) (*batonProc, error) {
	binary, err := batonBinary()
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "baton-go-")
	if err != nil {
		return nil, err
	}
	port, metricsPort := freePorts()
	b := &batonProc{binary: binary, dataDir: dataDir, addr: fmt.Sprintf("127.0.0.1:%d", port),
		metricsPort: metricsPort, env: env}
	if b.log, err = os.OpenFile(filepath.Join(dataDir, "baton.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	if err := b.spawn(); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

func (b *batonProc) spawn() error {
	b.cmd = exec.Command(b.binary, "serve", "--listen", b.addr, "--metrics-listen",
		fmt.Sprintf("127.0.0.1:%d", b.metricsPort), "--data-dir", b.dataDir)
	b.cmd.Env = append(os.Environ(), b.env...)
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	if err := b.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("baton did not start listening within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *batonProc) terminate() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
	b.cmd = nil
}

// restart sends SIGTERM (streams end cleanly, long polls answer), then starts the same binary
// again on the same port and data dir: what was in Redis is still there.
func (b *batonProc) restart() error {
	b.terminate()
	return b.spawn()
}

func (b *batonProc) stop() {
	b.terminate()
	b.log.Close()
	os.RemoveAll(b.dataDir)
}

func runWithBaton(m *testing.M) int {
	b, err := startBaton(quickEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.stop()
	server.addr = b.addr
	server.metricsPort = b.metricsPort
	server.conn, err = grpc.NewClient(server.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer server.conn.Close()
	return m.Run()
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// completed is baton_agents_completed_total for queue, by outcome.
func completed(t *testing.T, queue string) map[string]int {
	t.Helper()
	return completedAt(t, server.metricsPort, queue)
}

// completedAt is completed for the Baton whose metrics listen on metricsPort.
func completedAt(t *testing.T, metricsPort int, queue string) map[string]int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	counts := map[string]int{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "baton_agents_completed_total{") {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(line, -1) {
			labels[m[1]] = m[2]
		}
		if labels["queue"] == queue {
			v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			counts[labels["outcome"]] = int(v)
		}
	}
	return counts
}

func eventually(t *testing.T, timeout time.Duration, what string, probe func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !probe() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var uniqueN int

func unique(prefix string) string {
	uniqueN++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1_000_000_000, uniqueN)
}
