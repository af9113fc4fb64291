package main
import (
 _ "github.com/spf13/cobra"
 _ "modernc.org/sqlite"
 _ "github.com/google/jsonschema-go/jsonschema"
)
func main(){}
