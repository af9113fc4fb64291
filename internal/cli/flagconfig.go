package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
)

// maxConfigFile bounds a configuration file read by --config.
const maxConfigFile = 1 << 20

// applyConfigFile sets the flags of fs from the TOML file at path: each
// top-level key is a flag's long name (keep-recent = 4, no-think = true,
// min-hold = "20s"), and a table fills a map flag (a [route] table for
// --route, [model-window] for --model-window). Flags given on the command
// line win over the file, flag by flag (a map flag given on the command
// line replaces the file's whole table). The file is only read: an
// unknown key, a value of the wrong type or a file that is not TOML is an
// error naming the file and the key, and nothing is applied.
func applyConfigFile(fs *pflag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > maxConfigFile {
		return fmt.Errorf("config %s: larger than %d bytes", path, maxConfigFile)
	}
	sets, err := parseFlagConfig(fs, data)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	for _, s := range sets {
		if err := fs.Set(s.name, s.value); err != nil {
			return fmt.Errorf("config %s: %s: %w", path, s.name, err)
		}
	}
	return nil
}

// flagSet is one fs.Set call a configuration file asks for.
type flagSet struct{ name, value string }

// parseFlagConfig checks a configuration file against fs and returns the
// flag values to set, in a stable order; flags already changed on the
// command line are left out.
func parseFlagConfig(fs *pflag.FlagSet, data []byte) ([]flagSet, error) {
	var doc map[string]any
	dec := toml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("line %d, column %d: %s (the file must be TOML: key = value, [table])", row, col, de.Error())
		}
		return nil, err
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []flagSet
	for _, k := range keys {
		fl := fs.Lookup(k)
		if fl == nil || k == "config" || k == "help" {
			return nil, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(configKeys(fs), ", "))
		}
		typ := fl.Value.Type()
		isMap := strings.HasPrefix(typ, "stringTo")
		if table, ok := doc[k].(map[string]any); ok != isMap {
			if isMap {
				return nil, fmt.Errorf("%s: want a table ([%s] with model = value lines)", k, k)
			}
			return nil, fmt.Errorf("%s: want %s, not a table", k, typeName(typ))
		} else if isMap {
			names := make([]string, 0, len(table))
			for n := range table {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				if strings.ContainsAny(n, "=,\"") {
					return nil, fmt.Errorf("%s: key %q: '=', ',' and '\"' are not allowed", k, n)
				}
				v, err := scalar(table[n], strings.TrimPrefix(typ, "stringTo"))
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", k, n, err)
				}
				if !fl.Changed {
					out = append(out, flagSet{k, n + "=" + v})
				}
			}
			continue
		}
		v, err := scalar(doc[k], typ)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if !fl.Changed {
			out = append(out, flagSet{k, v})
		}
	}
	return out, nil
}

// scalar renders a TOML value as the text a flag of type typ parses,
// refusing a value of another kind or one the flag would not parse (a
// quoted number for an int flag is accepted, as on the command line), so
// that a bad file is refused before any flag is set.
func scalar(v any, typ string) (string, error) {
	switch x := v.(type) {
	case string:
		var err error
		switch typ {
		case "bool":
			err = errors.New("not a string")
		case "duration":
			_, err = time.ParseDuration(x)
		case "int", "Int":
			_, err = strconv.Atoi(x)
		case "float64":
			_, err = strconv.ParseFloat(x, 64)
		}
		if err != nil {
			return "", fmt.Errorf("want %s, not %q", typeName(typ), x)
		}
		return x, nil
	case bool:
		if typ != "bool" {
			return "", fmt.Errorf("want %s, not %v", typeName(typ), x)
		}
		return strconv.FormatBool(x), nil
	case int64:
		if typ != "int" && typ != "Int" && typ != "string" && typ != "float64" {
			return "", fmt.Errorf("want %s, not %d", typeName(typ), x)
		}
		return strconv.FormatInt(x, 10), nil
	case float64:
		if typ != "float64" {
			return "", fmt.Errorf("want %s, not %v", typeName(typ), x)
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("want %s, not %T", typeName(typ), v)
}

func typeName(typ string) string {
	switch typ {
	case "bool":
		return "true or false"
	case "duration":
		return `a duration ("20s", "1m30s")`
	case "Int", "int":
		return "a whole number"
	case "String", "string":
		return "a string"
	}
	return "a " + typ
}

// configKeys lists the keys a configuration file may set.
func configKeys(fs *pflag.FlagSet) []string {
	var keys []string
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "config" && fl.Name != "help" {
			keys = append(keys, fl.Name)
		}
	})
	return keys
}
