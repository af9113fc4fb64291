package vaultapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ctxkit/ctxkit/internal/vaultauth"
)

// errorBody is the error answer, as vaultauth.WriteError writes it.
type errorBody struct {
	Error vaultauth.Error `json:"error"`
}

// everyStatus are the error statuses every route may answer: 400 for a
// query parameter it does not take, 401 without a valid token, 429 after
// too many failed authentications, 500 for a fault of the server's.
var everyStatus = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusInternalServerError}

var pathParam = regexp.MustCompile(`\{([a-z_]+)(\.\.\.)?\}`)

// paramDoc describes the path parameters.
var paramDoc = map[string]string{
	"vault": "the vault's name",
	"agent": "the agent's name",
	"path":  "the document's path inside the vault, slash-separated",
	"name":  "the skill's name",
	"id":    "the episode's id",
}

// openAPIPath turns a mux pattern into an OpenAPI path.
func openAPIPath(pattern string) string {
	return strings.ReplaceAll(pattern, "...}", "}")
}

// openAPI builds the OpenAPI 3.1 document of the routes.
func (a *api) openAPI() ([]byte, error) {
	schema := func(t reflect.Type) (*jsonschema.Schema, error) {
		s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		return s, nil
	}
	errSchema, err := schema(reflect.TypeFor[errorBody]())
	if err != nil {
		return nil, err
	}
	errResponse := func(status int) map[string]any {
		return map[string]any{
			"description": http.StatusText(status),
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
	}
	paths := map[string]map[string]any{}
	for _, rt := range a.routes() {
		var params []map[string]any
		for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"description": paramDoc[m[1]], "schema": map[string]any{"type": "string"}})
		}
		if rt.Query != nil {
			for i := range rt.Query.NumField() {
				f := rt.Query.Field(i)
				s, err := schema(f.Type)
				if err != nil {
					return nil, err
				}
				p := map[string]any{"name": queryName(f), "in": "query", "required": false, "schema": s}
				if d := f.Tag.Get("jsonschema"); d != "" {
					p["description"] = d
				}
				params = append(params, p)
			}
		}
		op := map[string]any{"operationId": rt.ID, "tags": []string{rt.Tag}, "summary": rt.Summary}
		if params != nil {
			op["parameters"] = params
		}
		responses := map[string]any{}
		if rt.Body != nil {
			s, err := schema(rt.Body)
			if err != nil {
				return nil, err
			}
			ct := "application/json"
			if rt.BodyType != "" {
				ct = rt.BodyType
			}
			op["requestBody"] = map[string]any{"required": ct != "application/json",
				"content": map[string]any{ct: map[string]any{"schema": s}}}
			responses["413"] = errResponse(http.StatusRequestEntityTooLarge)
		}
		out, err := schema(rt.Out)
		if err != nil {
			return nil, err
		}
		ct := "application/json"
		if rt.OutType != "" {
			ct = rt.OutType
		}
		responses[strconv.Itoa(rt.Status)] = map[string]any{"description": http.StatusText(rt.Status),
			"content": map[string]any{ct: map[string]any{"schema": out}}}
		if rt.ID == "writeEpisode" {
			responses["200"] = map[string]any{"description": "dry run: nothing written",
				"content": map[string]any{ct: map[string]any{"schema": out}}}
		}
		for _, st := range slices.Concat(rt.Errors, everyStatus) {
			responses[strconv.Itoa(st)] = errResponse(st)
		}
		op["responses"] = responses
		p := openAPIPath(rt.Pattern)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.Method)] = op
	}
	paths["/v1/openapi.json"] = map[string]any{"get": map[string]any{
		"operationId": "openAPI", "tags": []string{"meta"}, "summary": "This document", "security": []any{},
		"responses": map[string]any{"200": map[string]any{"description": "OK",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}},
	}}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "ctxkit vault API",
			"version": "1",
			"description": "Vaults of memory for agents: documents (semantic vaults), skills and episodes. " +
				"Authenticate with Authorization: Bearer and an agent's token (ctxkit agent create NAME) or the owner's. " +
				"A restricted vault the caller is not attached to answers 404, exactly as a missing one. " +
				"Errors are {\"error\": {\"code\", \"message\", \"fix\", \"details\"}}: code is the error's class (invalid, " +
				"unauthenticated, forbidden, not_found, exists, conflict, unavailable, internal, or the transport's too_large, " +
				"rate_limited, method_not_allowed), fix says what to do about it.",
		},
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"security":          []any{map[string]any{"bearer": []any{}}},
		"paths":             paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas":         map[string]any{"Error": errSchema},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}
