package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The API server logs one JSON line per write request (hack/kwok/audit-policy.yaml). Trainyard's
// requests are those whose user agent starts with trainyardAgent (its client's UserAgent; the
// bench's own client calls itself benchscale).
const trainyardAgent = "trainyard"

// window is a stretch of the run, on the machine's clock, whose operator writes are counted
// together.
type window struct {
	name     string
	from, to time.Time
}

func (w window) contains(t time.Time) bool { return !t.Before(w.from) && !t.After(w.to) }

// writeCounts are the operator's write requests in one window.
type writeCounts struct {
	total  int
	byKind map[string]int // "pods create", "status patch", "events create", ...
	// conflictsByKind are the 409s by kind, e.g. "services create" (AlreadyExists).
	conflictsByKind map[string]int
	podsCreated     int // pod creations answered 201
	statusWrites    int // writes to a job's status subresource
	failed          int // answered outside 2xx
	conflicts       int // answered 409
	throttled       int // answered 429 (API Priority and Fairness rejected it)
}

// auditSummary counts the operator's writes per window.
type auditSummary struct {
	windows []window
	counts  []writeCounts // one per window
	read    bool
}

// auditLine is the part of an audit event the bench reads.
type auditLine struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// readAudit counts the operator's write requests in each window (by the time the response
// completed) and copies the operator's lines to copyTo, since the audit log goes with the cluster.
func readAudit(path string, windows []window, copyTo string) (auditSummary, error) {
	return readAuditOf(path, trainyardAgent, windows, copyTo)
}

// readAuditOf is readAudit for the requests whose user agent starts with agent.
// Note: the audit policy logs writes only, so a 429 answered to a read (a list) is not counted.
func readAuditOf(path string, agent string, windows []window, copyTo string) (auditSummary, error) {
	s := auditSummary{windows: windows, counts: make([]writeCounts, len(windows))}
	for i := range s.counts {
		s.counts[i].byKind = map[string]int{}
		s.counts[i].conflictsByKind = map[string]int{}
	}
	files, err := auditFiles(path)
	if err != nil {
		return s, err
	}
	out, err := os.Create(copyTo)
	if err != nil {
		return s, err
	}
	defer out.Close()
	w := bufio.NewWriter(out)
	defer w.Flush()

	for _, f := range files {
		if err := s.readFile(f, []byte(`"userAgent":"`+agent), windows, w); err != nil {
			return s, err
		}
	}
	s.read = true
	return s, nil
}

// auditFiles are the audit log and its rotated backups, oldest first. Note: the API server
// rotates its audit log at 100 MB (--audit-log-maxsize's default) into audit-<time>.log beside
// it, and a 5,000-pod run writes more than that.
func auditFiles(path string) ([]string, error) {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	slices.Sort(backups) // the time in their names sorts as text
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return append(backups, path), nil
}

// readFile adds one audit file's lines to the counts, copying those counted to w.
func (s *auditSummary) readFile(path string, agent []byte, windows []window, w *bufio.Writer) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Bytes()
		if !bytes.Contains(raw, agent) {
			continue
		}
		var l auditLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if !writeVerbs[l.Verb] {
			continue
		}
		written := false
		for i, win := range windows {
			if !win.contains(l.StageTimestamp) {
				continue
			}
			s.counts[i].add(l)
			written = true
		}
		if written { // of this run: a kept cluster's log also holds earlier runs
			w.Write(raw)
			w.WriteByte('\n')
		}
	}
	return sc.Err()
}

func (c *writeCounts) add(l auditLine) {
	resource, subresource := "", ""
	if l.ObjectRef != nil {
		resource, subresource = l.ObjectRef.Resource, l.ObjectRef.Subresource
	}
	code := 0
	if l.ResponseStatus != nil {
		code = l.ResponseStatus.Code
	}
	kind := writeKind(resource, subresource) + " " + l.Verb
	c.total++
	c.byKind[kind]++
	if resource == "pods" && subresource == "" && l.Verb == "create" && code == 201 {
		c.podsCreated++
	}
	if subresource == "status" {
		c.statusWrites++
	}
	if code < 200 || code > 299 {
		c.failed++
	}
	switch code {
	case 409:
		c.conflicts++
		c.conflictsByKind[kind]++
	case 429:
		c.throttled++
	}
}

// writeKind names what a write went to: pods, services, status (a job's status subresource),
// events, or the resource itself.
func writeKind(resource, subresource string) string {
	switch {
	case subresource == "status":
		return "status"
	case subresource != "":
		return resource + "/" + subresource
	default:
		return resource
	}
}

// of returns the counts of the named window.
func (s auditSummary) of(name string) (writeCounts, bool) {
	for i, w := range s.windows {
		if w.name == name {
			return s.counts[i], s.read
		}
	}
	return writeCounts{}, false
}
