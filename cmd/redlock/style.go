package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// style colours output written to a terminal, and does nothing otherwise
// or when NO_COLOR is set.
type style struct{ on bool }

func newStyle(w io.Writer) style {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return style{}
	}
	return style{on: isTerminal(w)}
}

func (s style) wrap(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(t string) string   { return s.wrap("1", t) }
func (s style) dim(t string) string    { return s.wrap("2", t) }
func (s style) red(t string) string    { return s.wrap("31", t) }
func (s style) green(t string) string  { return s.wrap("32", t) }
func (s style) yellow(t string) string { return s.wrap("33", t) }
func (s style) blue(t string) string   { return s.wrap("34", t) }
func (s style) cyan(t string) string   { return s.wrap("36", t) }

// cell is one table cell: its text and how to colour it.
type cell struct {
	text  string
	paint func(string) string
}

func plain(t string) cell { return cell{text: t} }

// writeTable writes rows with columns padded to their widest plain text,
// so that colour codes do not disturb the alignment.
func writeTable(w io.Writer, indent string, rows [][]cell) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			t := c.text
			if i < len(r)-1 {
				t += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2)
			}
			if c.paint != nil {
				// paint the text only, not the padding
				pad := len(t) - len(c.text)
				t = c.paint(c.text) + strings.Repeat(" ", pad)
			}
			b.WriteString(t)
		}
		io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n")
	}
}

// isTerminal reports whether w is a terminal, whatever NO_COLOR says.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
