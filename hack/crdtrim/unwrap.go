package main

import "strings"

// unwrap joins the lines of each paragraph of a description. controller-gen keeps the Go
// comment's line breaks, and kubectl explain prints them and then wraps the text again, so each
// field read ragged. Paragraphs (a blank line between), list items and indented lines are kept.
func unwrap(d string) string {
	paras := strings.Split(d, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		var b strings.Builder
		for j, l := range lines {
			if j > 0 {
				if keepBreak(l) {
					b.WriteByte('\n')
				} else {
					b.WriteByte(' ')
					l = strings.TrimLeft(l, " \t")
				}
			}
			b.WriteString(l)
		}
		paras[i] = b.String()
	}
	return strings.Join(paras, "\n\n")
}

// keepBreak: a line that starts a list item or is indented (code, a table) stays on its own.
func keepBreak(l string) bool {
	return strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
}
