package sdlstore

import (
	"slices"
	"strings"
)

// EventSeparator joins the events of one channel into one published message,
// as ricsdl and sdlgo do. An event must not contain it.
const EventSeparator = "___"

// ChannelEvents maps a channel name (without namespace) to the events to
// publish on it. All events of one channel are joined with EventSeparator
// and sent in one PUBLISH, after the write they go with succeeded.
type ChannelEvents map[string][]string

// checkNamespace validates a namespace: non-empty, without ',', '{' or '}'
// (they delimit the namespace in every key and channel).
func checkNamespace(ns string) error {
	if ns == "" {
		return invalidArg("namespace is empty")
	}
	if strings.ContainsAny(ns, ",{}") {
		return invalidArg("namespace %q contains one of ',', '{', '}'", ns)
	}
	return nil
}

// checkName validates a key, group, channel or resource name.
func checkName(what, name string) error {
	if name == "" {
		return invalidArg("%s name is empty", what)
	}
	return nil
}

// checkKeys validates a non-empty key list.
func checkKeys(keys []string) error {
	if len(keys) == 0 {
		return invalidArg("no keys given")
	}
	for _, k := range keys {
		if err := checkName("key", k); err != nil {
			return err
		}
	}
	return nil
}

// checkValue rejects a nil value; an empty non-nil slice is a valid value.
func checkValue(what string, v []byte) error {
	if v == nil {
		return invalidArg("%s is nil", what)
	}
	return nil
}

// nsPrefix is the part every key and channel of namespace ns starts with.
func nsPrefix(ns string) string { return "{" + ns + "}," }

// nsKey is the Redis key (or channel) of key in namespace ns.
func nsKey(ns, key string) string { return nsPrefix(ns) + key }

// nsKeys maps keys to their Redis keys, as command arguments.
func nsKeys(ns string, keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = nsKey(ns, k)
	}
	return out
}

// stripNamespace returns what follows the first ',' of a Redis key or
// channel, the way ricsdl and sdlgo strip the namespace.
func stripNamespace(full string) (string, bool) {
	_, rest, ok := strings.Cut(full, ",")
	return rest, ok
}

// globEscape escapes the characters that Redis glob patterns treat
// specially, so that s matches only itself.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// joinEvents builds the published message of one channel.
func joinEvents(events []string) string { return strings.Join(events, EventSeparator) }

// splitEvents splits a published message back into its events.
func splitEvents(msg string) []string { return strings.Split(msg, EventSeparator) }

// checkEvents validates the events of one channel: at least one, none
// containing the separator, and no event that would merge with the
// separator (an '_' at a boundary between two events) and split back
// differently.
func checkEvents(channel string, events []string) error {
	if len(events) == 0 {
		return invalidArg("channel %q has no events", channel)
	}
	for i, e := range events {
		if strings.Contains(e, EventSeparator) {
			return invalidArg("event %q of channel %q contains %q", e, channel, EventSeparator)
		}
		if (i < len(events)-1 && strings.HasSuffix(e, "_")) || (i > 0 && strings.HasPrefix(e, "_")) {
			return invalidArg("event %q of channel %q has an '_' next to the separator and would not split back", e, channel)
		}
	}
	return nil
}

// publishArgs validates ev and returns the (channel, message) pairs to
// publish for namespace ns, in channel order. An empty ev gives no pairs.
func (ev ChannelEvents) publishArgs(ns string) ([]any, error) {
	channels := make([]string, 0, len(ev))
	for ch := range ev {
		channels = append(channels, ch)
	}
	slices.Sort(channels)
	out := make([]any, 0, 2*len(channels))
	for _, ch := range channels {
		if err := checkName("channel", ch); err != nil {
			return nil, err
		}
		if err := checkEvents(ch, ev[ch]); err != nil {
			return nil, err
		}
		out = append(out, nsKey(ns, ch), joinEvents(ev[ch]))
	}
	return out, nil
}
