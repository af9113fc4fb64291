package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Table detection reads a bounded sample: at most sniffBytes bytes, cut at a
// line end, and at most sniffRecords records of it.
const (
	sniffBytes   = 64 << 10
	sniffRecords = 50
)

// delimiters are tried in order; the first that reads the sample as a table
// wins. Tabs come first because they almost never occur in prose, so a table
// that reads with tabs is a TSV even if its cells hold commas. Semicolons are
// the list separator of CSV files written with a decimal comma.
var delimiters = [...]rune{'\t', ',', ';'}

// parseTable reads body as a CSV or TSV table with a header row. It returns
// nil items when body is not such a table. Each data row becomes a JSON
// object whose keys are the header's names in order (see headerNames).
//
// Values are strings, except in numeric columns: a column is numeric when
// every non-empty cell of it in the sampled rows is a number as cellNumber
// defines, and at least one is. There each number cell becomes a JSON number
// and each empty cell null (a missing value), while any other cell stays a
// string. Deciding per column keeps a column of one type: a zip code column
// holding "02134" keeps "10001" a string too. Booleans are not converted:
// tables spell them many ways (true, TRUE, yes, 1), and converting one
// spelling would split a column between booleans and strings; a string
// "true" filters just as well.
//
// CSV is read strictly per RFC 4180 (encoding/csv without LazyQuotes); TSV is
// read with LazyQuotes, since TSV has no quoting convention and its cells
// often hold a bare inch mark.
func (o ParseOptions) parseTable(body []byte) (items []json.RawMessage, format string, err error) {
	// encoding/csv skips blank lines; the sniffer must see the header first.
	body = bytes.TrimLeft(body, "\r\n")
	delim, sample := sniffTable(body)
	if delim == 0 {
		return nil, "", nil
	}
	header := sample[0]
	keys := headerKeys(headerNames(header))
	numeric := numericColumns(sample[1:])

	r := newTableReader(body, delim)
	r.FieldsPerRecord = len(header)
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil { // the header
		return nil, "", nil
	}
	var a arena
	var row []byte
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A record further on breaks the table, so it is text after all.
			return nil, "", nil
		}
		if o.MaxItems > 0 && len(items) == o.MaxItems {
			return nil, "", fmt.Errorf("%w: more than %d rows", ErrTooLarge, o.MaxItems)
		}
		row = row[:0]
		for i, cell := range rec {
			if i == 0 {
				row = append(row, '{')
			} else {
				row = append(row, ',')
			}
			row = append(row, keys[i]...)
			if numeric[i] {
				if num, ok := cellNumber(cell); ok {
					row = append(row, num...)
					continue
				}
				if strings.Trim(cell, " ") == "" {
					row = append(row, "null"...)
					continue
				}
			}
			row = appendJSONString(row, cell)
		}
		row = append(row, '}')
		items = append(items, a.addRaw(row))
	}
	if len(items) == 0 {
		return nil, "", nil
	}
	format = FormatCSV
	if delim == '\t' {
		format = FormatTSV
	}
	return items, format, nil
}

func newTableReader(b []byte, delim rune) *csv.Reader {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma = delim
	r.LazyQuotes = delim == '\t'
	return r
}

// sniffTable decides from a sample whether body is a table and with which
// delimiter, returning 0 when it is not, and the records it read. A delimiter
// fits when the sample reads as records of the same number of fields, at
// least two: a header and at least one data row, or at least two data rows
// when there are only two columns, because two lines of prose or markup
// with one comma each ("Hello, world") read as such a table too. The header
// must then look like one (headerLikely).
func sniffTable(body []byte) (delim rune, sample [][]string) {
	head := body
	truncated := len(head) > sniffBytes
	if truncated {
		head = head[:sniffBytes]
		k := bytes.LastIndexByte(head, '\n')
		if k < 0 {
			return 0, nil
		}
		head = head[:k+1]
	}
	firstLine := head
	if k := bytes.IndexByte(head, '\n'); k >= 0 {
		firstLine = head[:k]
	}
	for _, d := range delimiters {
		if !bytes.ContainsRune(firstLine, d) {
			continue
		}
		recs := sniffRecordsWith(head, d, truncated)
		if len(recs) < 2 || len(recs[0]) < 2 || len(recs) == 2 && len(recs[0]) == 2 {
			continue
		}
		if headerLikely(recs[0], recs[1:]) {
			return d, recs
		}
	}
	return 0, nil
}

// sniffRecordsWith reads up to sniffRecords records of sample. It returns nil
// when the sample is not a consistent table with delim. When the sample was
// cut from a longer body, an error other than a field count mismatch may come
// from a quoted field cut in two, so the records before it still count.
func sniffRecordsWith(sample []byte, delim rune, truncated bool) [][]string {
	r := newTableReader(sample, delim)
	var recs [][]string
	for len(recs) < sniffRecords {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if truncated && !errors.Is(err, csv.ErrFieldCount) {
				break
			}
			return nil
		}
		recs = append(recs, rec)
	}
	return recs
}

// headerLikely reports whether the first record of a table looks like a
// header rather than data, after the votes of Python's csv.Sniffer.has_header:
// a column whose data cells are all numbers votes for a header when its first
// cell is not a number and against it when it is; a column whose data cells
// all have the same length (given two or more data rows) votes against a
// header when the first cell has that length too and for it otherwise. Unlike
// the Sniffer, a tie counts as a header, since tables returned by tools
// nearly always have one; what this rejects is text such as log lines,
// whose first line is as regular as the rest. A first record made only of
// numbers is never a header.
func headerLikely(header []string, data [][]string) bool {
	allNumbers := true
	for _, h := range header {
		if _, ok := cellNumber(h); !ok {
			allNumbers = false
			break
		}
	}
	if allNumbers {
		return false
	}
	votes := 0
	for col, h := range header {
		numeric, sameLen := true, len(data) >= 2
		n := utf8.RuneCountInString(data[0][col])
		for _, rec := range data {
			if _, ok := cellNumber(rec[col]); !ok {
				numeric = false
			}
			if utf8.RuneCountInString(rec[col]) != n {
				sameLen = false
			}
		}
		_, headerNumeric := cellNumber(h)
		switch {
		case numeric && headerNumeric:
			votes--
		case numeric:
			votes++
		case sameLen && utf8.RuneCountInString(h) == n:
			votes--
		case sameLen:
			votes++
		}
	}
	return votes >= 0
}

// numericColumns reports for each column whether its non-empty cells in rows
// are all numbers, with at least one.
func numericColumns(rows [][]string) []bool {
	numeric := make([]bool, len(rows[0]))
	for col := range numeric {
		numbers := 0
		for _, rec := range rows {
			if _, ok := cellNumber(rec[col]); ok {
				numbers++
			} else if strings.Trim(rec[col], " ") != "" {
				numbers = 0
				break
			}
		}
		numeric[col] = numbers > 0
	}
	return numeric
}

// headerNames turns a header record into distinct, non-empty object keys:
// names are trimmed of surrounding space, an empty name becomes "column_N"
// (N counting columns from 1), and a repeated name gets "_2", "_3"… (the
// first suffix not already taken).
func headerNames(header []string) []string {
	names := make([]string, len(header))
	taken := make(map[string]bool, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			h = "column_" + strconv.Itoa(i+1)
		}
		name := h
		for n := 2; taken[name]; n++ {
			name = h + "_" + strconv.Itoa(n)
		}
		taken[name] = true
		names[i] = name
	}
	return names
}

// headerKeys encodes each name once as the `"name":` that starts a member.
func headerKeys(names []string) [][]byte {
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i] = append(appendJSONString(nil, n), ':')
	}
	return keys
}

// cellNumber reports whether a cell, trimmed of spaces, is a number to store
// as a JSON number, and returns its text. It must be spelled exactly as JSON
// spells numbers: no leading zeros (a zip code "02134" stays a string), no
// "+", no "NaN", "Inf" or hex. Integers longer than 15 digits stay strings
// too, because they are identifiers (card, account or snowflake numbers) that
// a float64 would round; so do numbers a float64 cannot hold.
func cellNumber(cell string) (string, bool) {
	s := strings.Trim(cell, " ")
	if !isJSONNumber(s) {
		return "", false
	}
	digits := 0
	for i := 0; i < len(s) && s[i] != '.' && s[i] != 'e' && s[i] != 'E'; i++ {
		if s[i] != '-' {
			digits++
		}
	}
	if digits > 15 {
		return "", false
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return "", false
	}
	return s, true
}

// isJSONNumber reports whether s follows JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 bytes become
// U+FFFD; control characters, quotes and backslashes are escaped, and so are
// U+2028 and U+2029, as encoding/json does, so the output is safe in
// JavaScript too.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
