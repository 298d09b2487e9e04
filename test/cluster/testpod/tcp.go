package main

import (
	"encoding/json"
	"log"
	"net"
	"net/http"
	"time"
)

// server answers "ok" on each TCP connection to :8080, and logs who connected.
func server() error {
	lis, err := net.Listen("tcp", ":8080")
	if err != nil {
		return err
	}
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
		c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), 3*time.Second)
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
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return http.ListenAndServe(":8081", mux)
}
