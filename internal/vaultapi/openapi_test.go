package vaultapi

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestOpenAPI(t *testing.T) {
	e := newEnv(t, Options{})
	r := e.want(e.do("", "GET", "/v1/openapi.json", nil), 200, "openapi.json")
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	routes := (&api{}).routes()
	ops := 0
	for _, p := range doc.Paths {
		ops += len(p)
	}
	if ops != len(routes)+1 { // and openapi.json itself
		t.Errorf("%d operations in the document, %d routes", ops, len(routes))
	}
	ids := map[string]bool{}
	for _, rt := range routes {
		what := rt.Method + " " + rt.Pattern
		op := doc.Paths[openAPIPath(rt.Pattern)][strings.ToLower(rt.Method)]
		if op == nil {
			t.Errorf("%s is not in the document", what)
			continue
		}
		if op["operationId"] != rt.ID || ids[rt.ID] {
			t.Errorf("%s: operationId %v (duplicate: %v)", what, op["operationId"], ids[rt.ID])
		}
		ids[rt.ID] = true
		var params []string
		ps, _ := op["parameters"].([]any)
		for _, p := range ps {
			p := p.(map[string]any)
			if p["in"] == "path" {
				params = append(params, p["name"].(string))
			}
		}
		for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
			if !slices.Contains(params, m[1]) {
				t.Errorf("%s: path parameter %s is not described", what, m[1])
			}
		}
		responses := op["responses"].(map[string]any)
		for _, st := range []string{"401", "500"} {
			if responses[st] == nil {
				t.Errorf("%s: no %s response", what, st)
			}
		}
		if (rt.Body != nil) != (op["requestBody"] != nil) || (rt.Body != nil && responses["413"] == nil) {
			t.Errorf("%s: request body %v, document %v", what, rt.Body, op["requestBody"])
		}
		// The mux serves the route: it does not answer "no such route".
		path := pathParam.ReplaceAllString(rt.Pattern, "x")
		if res := e.do(owner, rt.Method, path, nil); strings.Contains(string(res.body), "no such route") {
			t.Errorf("%s is documented but not served: %s", what, res.body)
		}
	}
	// The request schemas come from the handlers' types: closed objects
	// with their required fields.
	body := doc.Paths["/v1/vaults/{vault}/documents/{path}"]["put"]["requestBody"].(map[string]any)
	s := body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	if !reflect.DeepEqual(s["required"], []any{"content"}) || s["additionalProperties"] == nil {
		t.Errorf("write document schema: %v", s)
	}
	// The answers of every test are checked against the schemas (env.do);
	// they do refuse what the handlers would not write.
	if err := e.doc["GET /v1/vaults"].responses["200"].Validate(map[string]any{"vaults": []any{}, "extra": 1.0}); err == nil {
		t.Error("an unknown key fits the schema")
	}
	if err := e.errors.Validate(map[string]any{"error": map[string]any{"message": "m"}}); err == nil {
		t.Error("an error without a code fits the schema")
	}
	// A passage says where it is in its file.
	answer := doc.Paths["/v1/vaults/{vault}/query"]["post"]["responses"].(map[string]any)["200"].(map[string]any)
	passage := dig(answer, "content", "application/json", "schema", "properties", "results", "items")
	loc := dig(passage, "properties", "locator")
	for _, f := range []string{"unit", "start", "end", "label"} {
		if dig(loc, "properties", f) == nil || !slices.Contains(loc["required"].([]any), any(f)) {
			t.Errorf("query answer: locator field %s missing or optional: %v", f, loc)
		}
	}
	if slices.Contains(passage["required"].([]any), any("locator")) {
		t.Error("query answer: a passage's locator is required; HTML and old indexes have none")
	}
	if doc.Paths["/v1/openapi.json"]["get"]["security"] == nil {
		t.Error("openapi.json is not marked public")
	}
}

// TestOpenAPIValid checks the served document with an independent
// validator of OpenAPI 3.1, the openapi-spec-validator Python package (it
// checks the document against the specification's schema and its rules,
// such as every path parameter being declared), and that the validator
// does refuse a document that breaks them.
func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.CommandContext(t.Context(), py, "-c", "import openapi_spec_validator").Run()
	}
	if err != nil {
		t.Skipf("no validator: python3 with openapi-spec-validator is not installed (%v)", err)
	}
	e := newEnv(t, Options{})
	doc := e.want(e.do("", "GET", "/v1/openapi.json", nil), 200, "openapi.json").body
	var broken map[string]any
	if err := json.Unmarshal(doc, &broken); err != nil {
		t.Fatal(err)
	}
	delete(broken["paths"].(map[string]any)["/v1/vaults/{vault}"].(map[string]any)["get"].(map[string]any), "parameters")
	brokenDoc, err := json.Marshal(broken)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "openapi.json"), filepath.Join(dir, "broken.json")
	for p, b := range map[string][]byte{good: doc, bad: brokenDoc} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := exec.CommandContext(t.Context(), py, "-m", "openapi_spec_validator", "--schema", "3.1", good, bad).CombinedOutput()
	if !strings.Contains(string(out), good+": OK\n") {
		t.Errorf("the OpenAPI document is not valid OpenAPI 3.1:\n%s", out)
	}
	if !strings.Contains(string(out), bad+": Validation Error") {
		t.Errorf("the validator accepts a document without a path parameter:\n%s", out)
	}
}

// dig follows keys through nested JSON objects; nil when one is missing.
func dig(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		if next == nil {
			return nil
		}
		m = next
	}
	return m
}
