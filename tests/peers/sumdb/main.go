// A peer for the audit log's tests: the Go checksum database's own packages
// (golang.org/x/mod/sumdb/tlog and sumdb/note), not our code, check what our log
// produces. It reads a JSON document on stdin (the entries, our tree heads, our
// proofs, our signed note, our keys) and writes what it found on stdout.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type proof struct {
	Index int64    `json:"index"`
	Old   int64    `json:"old"`
	Size  int64    `json:"size"`
	Proof []string `json:"proof"`
}

type input struct {
	Entries     []string         `json:"entries"` // base64
	Heads       map[string]string `json:"heads"`  // size -> base64 head
	Inclusion   []proof          `json:"inclusion"`
	Consistency []proof          `json:"consistency"`
	Note        string           `json:"note"`
	Verifier    string           `json:"verifier"`
	Signer      string           `json:"signer"`
	Text        string           `json:"text"`
}

type output struct {
	Heads       int      `json:"heads"`
	Inclusion   int      `json:"inclusion"`
	Consistency int      `json:"consistency"`
	SameProofs  int      `json:"same_proofs"`
	NoteText    string   `json:"note_text"`
	NoteSigner  string   `json:"note_signer"`
	GoNote      string   `json:"go_note"`
	Failures    []string `json:"failures"`
}

func hashes(encoded []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(encoded))
	for i, e := range encoded {
		raw, err := base64.StdEncoding.DecodeString(e)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("bad hash %q", e)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var out output
	fail := func(format string, args ...any) { out.Failures = append(out.Failures, fmt.Sprintf(format, args...)) }

	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		found := make([]tlog.Hash, len(indexes))
		for i, index := range indexes {
			found[i] = stored[index]
		}
		return found, nil
	})
	heads := map[int64]tlog.Hash{}
	for n, entry := range in.Entries {
		data, err := base64.StdEncoding.DecodeString(entry)
		if err != nil {
			fail("entry %d is not base64", n)
			continue
		}
		more, err := tlog.StoredHashes(int64(n), data, reader)
		if err != nil {
			fail("stored hashes %d: %v", n, err)
		}
		stored = append(stored, more...)
		head, err := tlog.TreeHash(int64(n+1), reader)
		if err != nil {
			fail("tree hash %d: %v", n+1, err)
		}
		heads[int64(n+1)] = head
	}
	for size, encoded := range in.Heads {
		var n int64
		fmt.Sscan(size, &n)
		ours, err := hashes([]string{encoded})
		if err != nil || heads[n] != ours[0] {
			fail("head of size %d: ours %s, tlog's %s", n, encoded, heads[n])
			continue
		}
		out.Heads++
	}
	for _, p := range in.Inclusion {
		ours, err := hashes(p.Proof)
		if err != nil {
			fail("inclusion %d in %d: %v", p.Index, p.Size, err)
			continue
		}
		if err := tlog.CheckRecord(ours, p.Size, heads[p.Size], p.Index, stored[tlog.StoredHashIndex(0, p.Index)]); err != nil {
			fail("inclusion %d in %d: %v", p.Index, p.Size, err)
			continue
		}
		out.Inclusion++
		theirs, err := tlog.ProveRecord(p.Size, p.Index, reader)
		if err == nil && fmt.Sprint(theirs) == fmt.Sprint(tlog.RecordProof(ours)) {
			out.SameProofs++
		}
	}
	for _, p := range in.Consistency {
		ours, err := hashes(p.Proof)
		if err != nil {
			fail("consistency %d to %d: %v", p.Old, p.Size, err)
			continue
		}
		if err := tlog.CheckTree(ours, p.Size, heads[p.Size], p.Old, heads[p.Old]); err != nil {
			fail("consistency %d to %d: %v", p.Old, p.Size, err)
			continue
		}
		out.Consistency++
		theirs, err := tlog.ProveTree(p.Size, p.Old, reader)
		if err == nil && fmt.Sprint(theirs) == fmt.Sprint(tlog.TreeProof(ours)) {
			out.SameProofs++
		}
	}
	if in.Note != "" {
		verifier, err := note.NewVerifier(in.Verifier)
		if err != nil {
			fail("our verifier key: %v", err)
		} else if opened, err := note.Open([]byte(in.Note), note.VerifierList(verifier)); err != nil {
			fail("our note: %v", err)
		} else {
			out.NoteText = opened.Text
			out.NoteSigner = opened.Sigs[0].Name
		}
	}
	if in.Signer != "" {
		signer, err := note.NewSigner(in.Signer)
		if err != nil {
			fail("our signer key: %v", err)
		} else if signed, err := note.Sign(&note.Note{Text: in.Text}, signer); err != nil {
			fail("signing: %v", err)
		} else {
			out.GoNote = string(signed)
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
