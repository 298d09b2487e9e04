package main

import (
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// server answers "ok" on each TCP connection to :8080, or to each of ports,
// and logs who connected.
func server(ports ...string) error {
	if len(ports) == 0 {
		ports = []string{"8080"}
	}
	errs := make(chan error, len(ports))
	for _, port := range ports {
		lis, err := net.Listen("tcp", ":"+port)
		if err != nil {
			return err
		}
		go func() { errs <- serve(lis) }()
	}
	return <-errs
}

func serve(lis net.Listener) error {
	for {
		c, err := lis.Accept()
		if err != nil {
			return err
		}
		log.Printf("accepted %s -> %s", c.RemoteAddr(), c.LocalAddr())
		_, _ = c.Write([]byte("ok\n"))
		_ = c.Close()
	}
}

// Dial is the answer of the client's /connect.
type Dial struct {
	// LocalPort is the connection's source port, known even when the
	// connection is refused, so that a test can report that attempt as a flow.
	LocalPort int `json:"localPort"`
	// Local and Remote are the connection's addresses, when it opened.
	Local  string `json:"local,omitempty"`
	Remote string `json:"remote,omitempty"`
	// Reply is what the server said.
	Reply string `json:"reply,omitempty"`
	Error string `json:"error,omitempty"`
}

// client serves /connect?addr=IP:PORT on :8081: one fresh connection each time,
// since a connection that is already open outlives a new NetworkPolicy.
func client() error {
	mux := http.NewServeMux()
	mux.HandleFunc("/connect", func(w http.ResponseWriter, r *http.Request) {
		var d Dial
		dialer := net.Dialer{Timeout: 3 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
			// Bind before connecting, to learn the source port of an attempt
			// that fails.
			var bindErr error
			err := rc.Control(func(fd uintptr) {
				if bindErr = syscall.Bind(int(fd), &syscall.SockaddrInet4{}); bindErr != nil {
					return
				}
				sa, err := syscall.Getsockname(int(fd))
				if err != nil {
					bindErr = err
					return
				}
				if in4, ok := sa.(*syscall.SockaddrInet4); ok {
					d.LocalPort = in4.Port
				}
			})
			if err != nil {
				return err
			}
			return bindErr
		}}
		c, err := dialer.Dial("tcp4", r.URL.Query().Get("addr"))
		if err != nil {
			d.Error = err.Error()
		} else {
			d.Local, d.Remote = c.LocalAddr().String(), c.RemoteAddr().String()
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 16)
			n, _ := c.Read(buf)
			d.Reply = string(buf[:n])
			_ = c.Close()
		}
		log.Printf("connect %s: %+v", r.URL.Query().Get("addr"), d)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("/list-pods", listPods)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return http.ListenAndServe(":8081", mux)
}

// dialMode connects to args[0] once, or every args[1] when given (args[2]
// times when given, else forever), and fails when a single connection fails.
func dialMode(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: testpod dial ADDR [INTERVAL [COUNT]]")
	}
	once := func() error {
		c, err := net.DialTimeout("tcp4", args[0], 3*time.Second)
		if err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 16)
		n, _ := c.Read(buf)
		log.Printf("dial %s: %s -> %s: %q", args[0], c.LocalAddr(), c.RemoteAddr(), buf[:n])
		return c.Close()
	}
	if len(args) == 1 {
		return once()
	}
	every, err := time.ParseDuration(args[1])
	if err != nil {
		return err
	}
	count := -1
	if len(args) > 2 {
		if count, err = strconv.Atoi(args[2]); err != nil {
			return err
		}
	}
	for i := 0; count < 0 || i < count; i++ {
		if err := once(); err != nil {
			log.Printf("dial %s: %v", args[0], err)
		}
		time.Sleep(every)
	}
	return nil
}
