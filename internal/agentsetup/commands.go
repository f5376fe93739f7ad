package agentsetup

import (
	"fmt"
	"strings"

	"github.com/drover-dev/drover/internal/hook"
)

// File is one file drover init writes: a path relative to the project
// root, and its content.
type File struct {
	Path    string
	Content string
}

// command is one slash command as every CLI gets it: the drover command
// line that reads the user's arguments on stdin, and what the agent does
// with its answer (the words of the Claude Code plugin's commands).
type command struct {
	name, description, argumentHint string
	// run is the drover command; "-" in it reads the arguments from stdin.
	run    string
	follow string
}

var commands = []command{
	{
		name: "do", description: "Add a task to this session's drover queue and start working through it",
		argumentHint: "<what to do>", run: "drover do -",
		follow: "Follow the drover instructions above. If they report an error instead, tell the user what went wrong and stop.",
	},
	{
		name: "add", description: "Add a task to this session's drover queue without starting it",
		argumentHint: "<what to do>", run: "drover add -",
		follow: "Tell the user, in one line, what drover reported above. Do not start working on the task.",
	},
	{
		name: "loop", description: "Work on one prompt in a loop until you output the completion promise, a budget is spent, or drover sees the loop converged or stuck",
		argumentHint: `"<prompt>" [--max-iterations N] [--completion-promise TEXT] [--max-minutes M] [--max-usd D] | cancel | status`,
		run:          "drover loop start --args -",
		follow:       "Follow the drover instructions above. If they report an error instead, tell the user what went wrong and stop.",
	},
	{
		name: "plan", description: "Work through a plan whose every step is reviewed by independent reviewers",
		argumentHint: "new <plan-id> [--tdd] | continue [<plan-id>] | status | findings | stop-reviews | ...",
		run:          "drover plan --args -",
		follow: "Above is drover's answer. If it reports an error, tell the user what went wrong and stop. If it is a status or a list of findings, show it as it is and stop. " +
			"Otherwise do exactly what it says, then stop: drover starts the independent review, and each of its messages tells you what to do next. Never edit state.json in the plan folder.",
	},
	{
		name: "cancel", description: "End this session's drover loop at once",
		run:    "drover loop cancel",
		follow: "Tell the user, in one line, what drover reported above, then stop.",
	},
}

// Commands returns the slash commands drover ships for cli: Gemini CLI's
// custom commands (.gemini/commands/drover/*.toml, run as /drover:do),
// whose !{...} runs drover before the model sees the prompt; Codex's
// skills (.agents/skills/drover-*/SKILL.md, run as $drover-do or from
// /skills), which ask the model to run drover with its shell tool. Codex
// deprecated its custom prompts (~/.codex/prompts) for skills, and no
// longer lists them. Claude Code's are the plugin's (plugin/commands):
// none here.
func Commands(cli hook.CLI) []File {
	var fs []File
	for _, c := range commands {
		switch cli {
		case hook.Gemini:
			fs = append(fs, File{Path: ".gemini/commands/drover/" + c.name + ".toml", Content: geminiCommand(c)})
		case hook.Codex:
			fs = append(fs, File{Path: ".agents/skills/drover-" + c.name + "/SKILL.md", Content: codexSkill(c)})
		}
	}
	return fs
}

// geminiCommand is c as a Gemini CLI custom command. Inside !{...} Gemini
// shell-quotes {{args}} (and runs the line with bash), so the arguments
// reach drover's stdin as typed; with 2>&1 a failing drover's message
// reaches the model, and Gemini adds its exit code. The line starts with
// drover, so that one allow rule (run_shell_command(drover)) covers it.
func geminiCommand(c command) string {
	shell := c.run + " 2>&1"
	if strings.HasSuffix(c.run, " -") {
		shell += " <<< {{args}}"
	}
	return fmt.Sprintf("description = %s\n\nprompt = '''\n!{%s}\n\n%s\n'''\n", tomlString(c.description), shell, c.follow)
}

// codexSkill is c as a Codex skill, for explicit use only: the model runs
// drover with the text the user gave after the skill's name on stdin,
// then follows its answer.
func codexSkill(c command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nname: drover-%s\ndescription: %s\n---\n", c.name,
		yamlString("drover: "+c.description+". Use only when the user invokes $drover-"+c.name+"."))
	if strings.HasSuffix(c.run, " -") {
		fmt.Fprintf(&b, "The user's text after $drover-%s is the input", c.name)
		if c.argumentHint != "" {
			fmt.Fprintf(&b, " (%s)", c.argumentHint)
		}
		fmt.Fprintf(&b, ". Run this shell command once, with that text, unchanged, between the markers, and read its output:\n\n```sh\n%s 2>&1 <<'DROVER_ARGS_END'\n<the user's text>\nDROVER_ARGS_END\n```\n\n", c.run)
	} else {
		fmt.Fprintf(&b, "Run this shell command once and read its output:\n\n```sh\n%s 2>&1\n```\n\n", c.run)
	}
	// The model reads drover's answer as the command's output, not above.
	b.WriteString(strings.ReplaceAll(c.follow, " above", " in the command's output") + "\n")
	return b.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// yamlString quotes s as a YAML single-quoted scalar.
func yamlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
