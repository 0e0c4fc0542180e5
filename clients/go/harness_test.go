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

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestMain(m *testing.M) {
	os.Exit(runWithBaton(m))
}

func runWithBaton(m *testing.M) int {
	binary := os.Getenv("TEST_BATON_BIN")
	if binary == "" {
		binary, _ = filepath.Abs(filepath.Join("..", "..", "target", "debug", "baton"))
	}
	if _, err := os.Stat(binary); err != nil {
		fmt.Fprintf(os.Stderr, "%s is missing: build it with `cargo build --bin baton`\n", binary)
		return 1
	}
	dataDir, err := os.MkdirTemp("", "baton-go-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dataDir)
	port, metricsPort := freePort(), freePort()
	server.addr = fmt.Sprintf("127.0.0.1:%d", port)
	server.metricsPort = metricsPort
	logFile, _ := os.Create(filepath.Join(dataDir, "baton.log"))
	cmd := exec.Command(binary, "serve", "--listen", server.addr, "--metrics-listen",
		fmt.Sprintf("127.0.0.1:%d", metricsPort), "--data-dir", dataDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", server.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "baton did not start listening within 30 s")
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", server.metricsPort))
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
