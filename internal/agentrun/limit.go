package agentrun

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Limit is a usage or rate limit that ended an agent's run: the API
// answered 429 (rate limited) or 529 (overloaded) until the CLI gave up,
// or the account's usage limit was reached. The work is not at fault:
// the same iteration can go on once the limit resets.
type Limit struct {
	// Status is the HTTP status the CLI reported (429, 529), 0 when only
	// the text told.
	Status int
	// Reset is when the limit said it resets; zero when it did not say.
	Reset time.Time
	// Message is what the agent said of it: its result text, or its
	// last error line.
	Message string
}

// maxLimitMessage bounds Limit.Message.
const maxLimitMessage = 512

// The phrases that make an error text a limit. They are looked for only in
// the text of a run that failed: an agent that finished its work may well
// have written about rate limits. Gemini's API says RESOURCE_EXHAUSTED and
// "Quota exceeded" for its 429s; Codex says "You've hit your usage limit".
var limitPhrase = regexp.MustCompile(`(?i)usage limit|rate[ _]limit|limit reached|hit your (?:\w+ )?limit|too many requests|overloaded|resource[ _]exhausted|quota exceeded|api error: (?:request rejected \()?(?:429|529)\b`)

// The ways a limit names its reset.
var (
	// "Claude AI usage limit reached|1767225600": Unix seconds.
	resetEpoch = regexp.MustCompile(`(?i)limit reached\|(\d{9,11})\b`)
	// "resets at 2026-05-09 18:00:00", "reset at 2026-05-09T18:00:00Z".
	resetStamp = regexp.MustCompile(`(?i)resets?(?: at)? (\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:?\d{2})?`)
	// "resets 3pm", "reset at 11:50pm (America/Los_Angeles)", "resets Apr
	// 23, 3pm", "resets at 14:05".
	resetClock = regexp.MustCompile(`(?i)resets?(?: at)? (?:([a-z]{3}) (\d{1,2}),? )?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z0-9_+\-/]+)\))?`)
	// "retry after 30 seconds", "try again in 5 minutes".
	resetAfter = regexp.MustCompile(`(?i)(?:retry|try again) (?:after|in) (\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`)
)

// ParseLimit reads the error text of a failed run: whether it says a
// usage or rate limit stopped the agent and, if it names one, when that
// limit resets. now is the time of the text: a clock time without a date
// is its next occurrence after now, in the time zone the text names or
// else in now's.
func ParseLimit(text string, now time.Time) (Limit, bool) {
	if !limitPhrase.MatchString(text) {
		return Limit{}, false
	}
	return Limit{Reset: parseReset(text, now), Message: clipText(strings.TrimSpace(text), maxLimitMessage)}, true
}

// parseReset finds when a limit's text says it resets; zero when it does
// not say, or says nothing that makes sense.
func parseReset(text string, now time.Time) time.Time {
	if m := resetEpoch.FindStringSubmatch(text); m != nil {
		sec, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil {
			return time.Unix(sec, 0).In(now.Location())
		}
	}
	if m := resetStamp.FindStringSubmatch(text); m != nil {
		layout, value := "2006-01-02 15:04", m[1]+" "+m[2]+":"+m[3]
		if m[4] != "" {
			layout, value = layout+":05", value+":"+m[4]
		}
		if zone := m[5]; zone != "" {
			if zone == "Z" || zone == "z" {
				zone = "+00:00"
			} else if !strings.Contains(zone, ":") {
				zone = zone[:3] + ":" + zone[3:]
			}
			layout, value = layout+"Z07:00", value+zone
		}
		if t, err := time.ParseInLocation(layout, value, now.Location()); err == nil {
			return t
		}
	}
	if m := resetClock.FindStringSubmatch(text); m != nil && (m[4] != "" || m[5] != "") {
		if t, ok := nextClock(m, now); ok {
			return t
		}
	}
	if m := resetAfter.FindStringSubmatch(text); m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil {
			unit := time.Second
			switch strings.ToLower(m[2])[0] {
			case 'm':
				unit = time.Minute
			case 'h':
				unit = time.Hour
			}
			return now.Add(time.Duration(n) * unit)
		}
	}
	return time.Time{}
}

// nextClock is the next time after now that a resetClock match names.
func nextClock(m []string, now time.Time) (time.Time, bool) {
	hour, err := strconv.Atoi(m[3])
	if err != nil {
		return time.Time{}, false
	}
	minute := 0
	if m[4] != "" {
		if minute, err = strconv.Atoi(m[4]); err != nil {
			return time.Time{}, false
		}
	}
	switch ampm := strings.ToLower(m[5]); {
	case ampm != "" && (hour < 1 || hour > 12):
		return time.Time{}, false
	case ampm == "am" && hour == 12:
		hour = 0
	case ampm == "pm" && hour < 12:
		hour += 12
	}
	if hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if m[6] != "" {
		if l, err := time.LoadLocation(m[6]); err == nil {
			loc = l
		}
	}
	local := now.In(loc)
	year, month, day := local.Date()
	withDate := m[1] != ""
	if withDate {
		mon, err := time.Parse("Jan", strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:]))
		d, derr := strconv.Atoi(m[2])
		if err != nil || derr != nil || d < 1 || d > 31 {
			return time.Time{}, false
		}
		month, day = mon.Month(), d
	}
	t := time.Date(year, month, day, hour, minute, 0, 0, loc)
	for !t.After(now) {
		if withDate {
			t = t.AddDate(1, 0, 0)
		} else {
			t = t.AddDate(0, 0, 1)
		}
	}
	return t, true
}

// limitStatus says whether an HTTP status the CLI reports is a limit.
func limitStatus(status int) bool { return status == 429 || status == 529 }

// limitErrors are the values of an assistant message's "error" that say
// the API limited the run (Claude Code's synthetic message when it gives
// up retrying).
var limitErrors = map[string]bool{"rate_limit": true, "overloaded": true}

// detectLimit says whether a run that did not finish cleanly was ended by
// a usage or rate limit: by the status the CLI reported on its result
// line or the error of its made-up last message, or by what its error
// result or its stderr says. The text of a result that is not an error
// is not read: an agent may well write about rate limits.
func detectLimit(r *Result, now time.Time) *Limit {
	var texts []string
	if r.IsError {
		texts = append(texts, r.FinalText)
	}
	if r.IsError || !r.SawResult {
		texts = append(texts, lastLine(r.Stderr))
	}
	flagged := limitStatus(r.APIErrorStatus) || limitErrors[r.apiError]
	var l *Limit
	for _, text := range texts {
		if text == "" {
			continue
		}
		if found, ok := ParseLimit(text, now); ok {
			l = &found
			break
		}
	}
	switch {
	case l == nil && !flagged:
		return nil
	case l == nil:
		msg := r.FinalText
		if msg == "" {
			msg = "API error " + r.apiError
		}
		l = &Limit{Reset: parseReset(msg, now), Message: clipText(strings.TrimSpace(msg), maxLimitMessage)}
	}
	if limitStatus(r.APIErrorStatus) {
		l.Status = r.APIErrorStatus
	}
	return l
}
