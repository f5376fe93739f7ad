#!/bin/bash
# Writes the input files of seed 004's unit cases into cases/<case-id>/
# exactly as the seed's runner (autotest/dev-loop/run-unit.sh) writes them
# into its temporary test directory before it runs the target: the lines
# below are the runner's, with only the directory changed. Run it from
# this folder after changing test-cases.json (copied verbatim from the
# seed); the tests replay the files unchanged. Needs jq.
set -euo pipefail
cd "$(dirname "$0")"
TEST_CASES_FILE=test-cases.json

# Helper: generate a single JSONL tool_use line
make_tool_line() {
  local tool_name="$1"
  local input_json="$2"
  jq -nc \
    --arg tool "$tool_name" \
    --argjson inp "$input_json" \
    '{"type":"assistant","message":{"content":[{"type":"tool_use","name":$tool,"input":$inp}]}}'
}

# Helper: generate a text assistant line (for promise matching)
make_text_line() {
  local text="$1"
  jq -nc --arg t "$text" '{"type":"assistant","message":{"content":[{"type":"text","text":$t}]}}'
}

write_case() {
  local case_id="$1"
  local tc_json
  tc_json=$(jq -c --arg id "$case_id" '.test_cases[] | select(.id == $id)' "$TEST_CASES_FILE")
  local filler_count
  filler_count=$(echo "$tc_json" | jq -r '.filler_count // 10')

  local test_dir="cases/$case_id"
  rm -rf "$test_dir"
  mkdir -p "$test_dir"

  local state_dir="$test_dir/.claude"
  local state_file="$state_dir/dev-loop.local.json"
  local transcript_file="$test_dir/transcript.jsonl"
  local reflections_dir="$test_dir/reflections"
  mkdir -p "$state_dir" "$reflections_dir"

  # Seed state file if specified
  local state_data
  state_data=$(echo "$tc_json" | jq -c '.state_file // empty')
  if [[ -n "$state_data" && "$state_data" != "null" && "$state_data" != "" ]]; then
    echo "$state_data" > "$state_file"
  fi

  # Handle raw_state_file (for corrupted state testing)
  local raw_state
  raw_state=$(echo "$tc_json" | jq -r '.raw_state_file // empty')
  if [[ -n "$raw_state" && "$raw_state" != "null" && "$raw_state" != "" ]]; then
    printf '%s' "$raw_state" > "$state_file"
  fi

  # Seed pre_reflections if specified
  local pre_reflections
  pre_reflections=$(echo "$tc_json" | jq -c '.pre_reflections // empty')
  if [[ -n "$pre_reflections" && "$pre_reflections" != "null" && "$pre_reflections" != "" ]]; then
    local refl_count
    refl_count=$(echo "$pre_reflections" | jq 'length')
    local r
    for (( r=0; r<refl_count; r++ )); do
      local iter
      iter=$(echo "$pre_reflections" | jq -r ".[$r].iteration")
      echo "$pre_reflections" | jq -c ".[$r]" > "$reflections_dir/iteration-${iter}.json"
    done
  fi

  # Generate synthetic JSONL transcript
  # Filler lines first
  local i
  for (( i=0; i<filler_count; i++ )); do
    make_tool_line "Write" "{\"file_path\":\"/project/filler${i}.ts\",\"content\":\"// filler\"}" >> "$transcript_file"
  done

  # Test-specific tool calls
  local transcript_arr
  transcript_arr=$(echo "$tc_json" | jq -c '.transcript // []')
  local tc_count
  tc_count=$(echo "$transcript_arr" | jq 'length')
  local j
  for (( j=0; j<tc_count; j++ )); do
    local tc_tool tc_input
    tc_tool=$(echo "$transcript_arr" | jq -r ".[${j}].tool")
    tc_input=$(echo "$transcript_arr" | jq -c ".[${j}].input")
    make_tool_line "$tc_tool" "$tc_input" >> "$transcript_file"
  done

  # Text lines (for promise matching)
  local transcript_text
  transcript_text=$(echo "$tc_json" | jq -c '.transcript_text // empty')
  if [[ -n "$transcript_text" && "$transcript_text" != "null" && "$transcript_text" != "" ]]; then
    local text_count
    text_count=$(echo "$transcript_text" | jq 'length')
    local t
    for (( t=0; t<text_count; t++ )); do
      local text_val
      text_val=$(echo "$transcript_text" | jq -r ".[${t}]")
      make_text_line "$text_val" >> "$transcript_file"
    done
  fi

  # Seed metrics_history for convergence tests
  local metrics_history
  metrics_history=$(echo "$tc_json" | jq -c '.metrics_history // empty')
  if [[ -n "$metrics_history" && "$metrics_history" != "null" && "$metrics_history" != "" ]]; then
    echo "$metrics_history" > "$test_dir/metrics-history.json"
  fi

  # Seed routing_input for agent-router tests
  local routing_input
  routing_input=$(echo "$tc_json" | jq -c '.routing_input // empty')
  if [[ -n "$routing_input" && "$routing_input" != "null" && "$routing_input" != "" ]]; then
    echo "$routing_input" > "$test_dir/routing-input.json"
  fi
}

while IFS= read -r id; do
  write_case "$id"
done < <(jq -r '.test_cases[] | select(.layer == "unit") | .id' "$TEST_CASES_FILE")
