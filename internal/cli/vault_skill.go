package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/vault"
)

func newVaultSkillsCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "skills VAULT",
		Short: "List a skill vault's skills, and the files that are not valid skills",
		Long: "List the skills of a skill vault: *.md files at its top level and NAME/SKILL.md folders (the Agent Skills " +
			"layout), each with YAML frontmatter (name, description, optional license, metadata, allowed-tools) and its " +
			"instructions. Invalid files and duplicate names are reported, never dropped silently; the exit status is 1 " +
			"when there are any.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultSkills(cmd.Context(), v, args[0], asJSON, streams) })
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the skills and problems as JSON")
	return cmd
}

func runVaultSkills(ctx context.Context, v *vaults, name string, asJSON bool, streams IO) error {
	rep, err := v.svc.Skills(ctx, v.caller, name)
	if err != nil {
		return err
	}
	return printSkills(rep, asJSON, streams)
}

// printSkills prints a skill vault's skills and problems; problems make the
// command fail (silently: they are printed).
func printSkills(rep *vault.SkillReport, asJSON bool, streams IO) error {
	if asJSON {
		if err := writeJSON(streams.Out, rep); err != nil {
			return err
		}
	} else {
		for _, s := range rep.Skills {
			fmt.Fprintf(streams.Out, "%s\t%s\t%s\n", s.Name, s.Path, snippet(s.Description, 80))
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(streams.Out, "problem: %s: %s\n", p.Path, p.Error)
		}
	}
	if len(rep.Problems) > 0 {
		return errSilent
	}
	return nil
}

func newVaultSkillCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "skill VAULT NAME",
		Short: "Print one skill's instructions",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withVaults(cmd.Context(), f, func(v *vaults) error {
				s, err := v.svc.Skill(cmd.Context(), v.caller, args[0], args[1])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(streams.Out, s)
				}
				fmt.Fprintf(streams.Out, "# %s\n\n%s\n\n%s\n", s.Name, s.Description, s.Instructions)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the skill as JSON")
	return cmd
}

// VaultWriteSkillOptions are the inputs of `ctxkit vault write-skill`.
type VaultWriteSkillOptions struct {
	Vault, Name, Description string
	Instructions, FromFile   string
	Overwrite                bool
}

func newVaultWriteSkillCmd(g *globals, f *vaultFlags, streams IO) *cobra.Command {
	opts := &VaultWriteSkillOptions{}
	cmd := &cobra.Command{
		Use:   "write-skill VAULT NAME --description D (--instructions TEXT | --from-file F)",
		Short: "Write a skill (NAME/SKILL.md) into a skill vault",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Vault, opts.Name = args[0], args[1]
			return g.withVaults(cmd.Context(), f, func(v *vaults) error { return runVaultWriteSkill(cmd.Context(), v, opts, streams) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Description, "description", "", "what the skill does and when to use it (at most 1,024 characters)")
	fl.StringVar(&opts.Instructions, "instructions", "", "the skill's instructions (markdown)")
	fl.StringVar(&opts.FromFile, "from-file", "", "read the instructions from this file (- for standard input)")
	fl.BoolVar(&opts.Overwrite, "overwrite", false, "replace a skill of the same name")
	_ = cmd.MarkFlagRequired("description")
	cmd.MarkFlagsMutuallyExclusive("instructions", "from-file")
	cmd.MarkFlagsOneRequired("instructions", "from-file")
	return cmd
}

func runVaultWriteSkill(ctx context.Context, v *vaults, opts *VaultWriteSkillOptions, streams IO) error {
	text, err := readInput(opts.Instructions, opts.FromFile, streams.In)
	if err != nil {
		return fmt.Errorf("read the instructions: %w", err)
	}
	s, err := v.svc.WriteSkill(ctx, v.caller, opts.Vault, opts.Name, vault.WriteSkillRequest{Description: opts.Description,
		Instructions: text, Overwrite: opts.Overwrite})
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "wrote skill %q to %s\n", s.Name, s.Path)
	return nil
}
