package main

import (
	"bufio"
	"bytes"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// readLines reads a POSTed body's non-empty lines.
func readLines(r io.Reader) ([][]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines [][]byte
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			lines = append(lines, bytes.Clone(l))
		}
	}
	return lines, sc.Err()
}

// readMessages reads a POSTed body of protojson messages, one a line.
func readMessages[M proto.Message](r io.Reader, newMsg func() M) ([]M, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	msgs := make([]M, 0, len(lines))
	for _, l := range lines {
		m := newMsg()
		if err := protojson.Unmarshal(l, m); err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
