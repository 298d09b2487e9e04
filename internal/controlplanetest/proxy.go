package controlplanetest

import (
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections to a target, and can cut them all and refuse
// new ones for a while: the API server as a component sees it in a network
// outage, without restarting the API server (which would change its
// certificates).
type Proxy struct {
	// Addr is the proxy's address, the same before and after an outage.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// StartProxy listens on a free loopback port and forwards to target (host:port).
func StartProxy(target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// Cut closes the listener and every open connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// Restore listens again on the same address.
func (p *Proxy) Restore() error {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}
