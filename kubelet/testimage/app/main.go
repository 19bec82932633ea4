// Command app is the one program inside skiff's test image. Its first
// argument picks a behaviour the node-agent tests need to observe: a web
// server with /healthz, a process that exits with a chosen code, one that
// eats memory until its cgroup kills it, one that waits for SIGTERM, and
// small probes (id, caps, touch, echo) used through exec; chat answers
// each line of its stdin (attach tests).
//
// It is compiled statically (CGO_ENABLED=0) so the image needs no libc.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: app serve|crash|hog|sleep|block|cat|chat|echo|id|caps|touch|write|read|env|pwd [args]")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	switch mode {
	case "serve":
		os.Exit(serve(args))
	case "crash":
		os.Exit(crash(args))
	case "hog":
		os.Exit(hog())
	case "sleep":
		os.Exit(sleep(args))
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "id":
		fmt.Printf("uid=%d gid=%d\n", os.Getuid(), os.Getgid())
	case "caps":
		os.Exit(caps())
	case "touch":
		os.Exit(touch(args))
	case "write":
		// write PATH TEXT...: the text, as a file (volume persistence tests).
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: app write PATH TEXT...")
			os.Exit(2)
		}
		if err := os.WriteFile(args[0], []byte(strings.Join(args[1:], " ")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "read":
		// read PATH: the file's content on stdout.
		if len(args) != 1 {
			fmt.Fprintln(os.Stderr, "usage: app read PATH")
			os.Exit(2)
		}
		b, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Stdout.Write(b)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "block":
		// Ignore SIGTERM outright (Go would otherwise exit with status 2 on
		// it): only SIGKILL ends this.
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("blocking: SIGTERM ignored") // tests wait for this before stopping
		for {
			time.Sleep(time.Hour)
		}
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "chat":
		os.Exit(chat(args))
	case "pwd":
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(wd)
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		os.Exit(2)
	}
}

// serve answers /healthz with "ok" and / with the hostname on the given
// address (default :8080) and exits 0 on SIGTERM.
func serve(args []string) int {
	addr := ":8080"
	if len(args) > 0 {
		addr = args[0]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		host, _ := os.Hostname()
		fmt.Fprintln(w, host)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Printf("serving on %s\n", addr)
	select {
	case sig := <-term:
		fmt.Printf("got %v, shutting down\n", sig)
		return 0
	case err := <-errc:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
}

// crash writes a line on each stream and exits with the given code (default 1).
func crash(args []string) int {
	code := 1
	if len(args) > 0 {
		c, err := strconv.Atoi(args[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad exit code %q\n", args[0])
			return 2
		}
		code = c
	}
	fmt.Println("about to crash")
	fmt.Fprintf(os.Stderr, "crashing with exit code %d\n", code)
	return code
}

// hog allocates and touches memory 4 MiB at a time forever; under a memory
// limit the kernel's OOM killer ends it.
func hog() int {
	var kept [][]byte
	for i := 1; ; i++ {
		b := make([]byte, 4<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		kept = append(kept, b)
		if i%8 == 0 {
			fmt.Printf("holding %d MiB\n", 4*i)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleep waits until SIGTERM, says so on stdout and exits with the given
// code (default 0). Without the handler PID 1 would ignore SIGTERM.
func sleep(args []string) int {
	code := 0
	if len(args) > 0 {
		c, err := strconv.Atoi(args[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad exit code %q\n", args[0])
			return 2
		}
		code = c
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println("sleeping")
	<-term
	fmt.Println("got SIGTERM")
	return code
}

// caps prints the effective capability mask from /proc/self/status.
func caps() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "CapEff:") {
			fmt.Println(strings.TrimSpace(strings.TrimPrefix(line, "CapEff:")))
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no CapEff line")
	return 1
}

// touch creates the named file, reporting the error (e.g. a read-only root
// file system) with exit code 1.
func touch(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: app touch PATH")
		return 2
	}
	f, err := os.Create(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f.Close()
	fmt.Println("created", args[0])
	return 0
}

// chat says whether its stdin is a terminal, then answers each line it
// reads with "got <line>" and the terminal's size, and "stdin closed" at
// the end of its input; it then lingers for the seconds in args[0].
func chat(args []string) int {
	size := func() string {
		ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
		if err != nil {
			return "none"
		}
		return fmt.Sprintf("%dx%d", ws.Col, ws.Row)
	}
	_, err := unix.IoctlGetTermios(0, unix.TCGETS)
	fmt.Printf("tty=%t\n", err == nil)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Printf("got %s size=%s\n", strings.TrimRight(sc.Text(), "\r"), size())
	}
	fmt.Println("stdin closed")
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil {
			time.Sleep(time.Duration(n) * time.Second)
		}
	}
	return 0
}
