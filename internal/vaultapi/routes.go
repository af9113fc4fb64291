package vaultapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// route is one operation of the API: what the mux serves and what the
// OpenAPI document says of it, from the same types.
type route struct {
	Method  string
	Pattern string // a ServeMux pattern without the method
	ID      string // OpenAPI operationId
	Tag     string
	Summary string
	// Query is the struct type the query string is decoded into (nil:
	// none), Body the request body's (nil: none), Out the success
	// answer's.
	Query, Body, Out reflect.Type
	// BodyType and OutType name a non-JSON body or answer (JSON lines).
	BodyType, OutType string
	// Status is the success status.
	Status int
	// Errors are the error statuses the route may answer besides those
	// every route may (everyStatus), and 413 for a route with a body.
	Errors  []int
	handler http.Handler
}

// handle builds a route whose handler decodes the query string into Q
// and the body into B, calls fn and answers its result as JSON with
// status (or the status fn returns, when not 0). A Q or B of struct{}
// means none.
func handle[Q, B, O any](method, pattern, id, tag, summary string, status int, errs []int,
	fn func(w http.ResponseWriter, req *http.Request, q *Q, b *B) (O, int, error), a *api) route {
	rt := route{Method: method, Pattern: pattern, ID: id, Tag: tag, Summary: summary, Status: status, Errors: errs,
		Out: reflect.TypeFor[O]()}
	if t := reflect.TypeFor[Q](); t.NumField() > 0 {
		rt.Query = t
	}
	if t := reflect.TypeFor[B](); t.NumField() > 0 {
		rt.Body = t
	}
	rt.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var q Q
		var b B
		if rt.Query != nil {
			if err := decodeQuery(req, &q); err != nil {
				a.fail(w, req, err)
				return
			}
		} else if len(req.URL.RawQuery) > 0 {
			a.fail(w, req, errBad("this route takes no query parameters"))
			return
		}
		if rt.Body != nil {
			if err := decode(req, &b); err != nil {
				a.fail(w, req, err)
				return
			}
		}
		out, st, err := fn(w, req, &q, &b)
		if err != nil {
			a.fail(w, req, err)
			return
		}
		if st == 0 {
			st = status
		}
		writeJSON(w, st, out)
	})
	return rt
}

// none is the query or body of a route that takes none.
type none struct{}

// decodeQuery fills the fields of *dst, a struct of strings, bools,
// ints and float64s named by their json tags, from the query string; a
// parameter it does not have, a repeated one or a malformed value is a
// 400.
func decodeQuery(req *http.Request, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	fields := map[string]int{}
	for i := range t.NumField() {
		fields[queryName(t.Field(i))] = i
	}
	for name, vals := range req.URL.Query() {
		i, ok := fields[name]
		if !ok {
			return &badRequest{msg: fmt.Sprintf("unknown query parameter %q", name), details: map[string]any{"parameter": name}}
		}
		if len(vals) != 1 {
			return &badRequest{msg: fmt.Sprintf("query parameter %q is given %d times", name, len(vals)), details: map[string]any{"parameter": name}}
		}
		s, f := vals[0], v.Field(i)
		var err error
		switch f.Kind() {
		case reflect.String:
			f.SetString(s)
		case reflect.Bool:
			var b bool
			if s == "" {
				b = true // ?dry_run alone means true
			} else {
				b, err = strconv.ParseBool(s)
			}
			f.SetBool(b)
		case reflect.Int:
			var n int64
			n, err = strconv.ParseInt(s, 10, 64)
			f.SetInt(n)
		case reflect.Float64:
			var x float64
			x, err = strconv.ParseFloat(s, 64)
			f.SetFloat(x)
		default:
			panic(fmt.Sprintf("vaultapi: query field %s of type %s", t.Field(i).Name, f.Type()))
		}
		if err != nil {
			return &badRequest{msg: fmt.Sprintf("query parameter %q: %q is not a %s", name, s, f.Kind()), details: map[string]any{"parameter": name}}
		}
	}
	return nil
}

// queryName is a query field's parameter name, from its json tag.
func queryName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// routes lists every route of the API. New serves them and openAPI
// describes them.
func (a *api) routes() []route {
	var rs []route
	rs = append(rs, a.vaultRoutes()...)
	rs = append(rs, a.documentRoutes()...)
	rs = append(rs, a.skillRoutes()...)
	rs = append(rs, a.episodeRoutes()...)
	return rs
}
