package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Defaults of the keys that have one.
const (
	DefaultListen        = "127.0.0.1:8080"
	DefaultRedisPrefix   = "askbridge:"
	DefaultSlackAPIURL   = "https://slack.com/api/"
	DefaultDiscordAPIURL = "https://discord.com/api/v10/"
	DefaultRoute         = "default" // the route of a request that names none

	DefaultRetention     = 168 * time.Hour
	MinRetention         = time.Hour // the finish index tries edits up to an hour after an end (pending.finishGiveUp)
	DefaultExpiresIn     = 24 * time.Hour
	DefaultSweepInterval = time.Second
	DefaultMaxWait       = 60 * time.Second

	DefaultSessionTTL = 12 * time.Hour
	DefaultLinkTTL    = 168 * time.Hour
	// DefaultMaxLinkStreams is web.max_link_streams's default, as the web
	// app's own (web.DefaultLinkStreams).
	DefaultMaxLinkStreams = 1000

	DefaultLogLevel  = "info"
	DefaultLogFormat = "text"
)

// Load reads the config file at path; see Parse, whose config it returns
// with the error when Parse does, as a *FileError. A file that can't be
// read is an error naming it (os.ReadFile's).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return c, &FileError{Path: path, Err: err}
	}
	return c, nil
}

// FileError is what Parse found wrong in the config file at Path: Err
// holds each problem, a line each (errors.Join), as Parse words it.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return "config " + e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Parse reads a config file's contents: it expands ${VAR} and
// ${VAR:-default} in values from the environment, rejects unknown keys, and
// fills in defaults. Empty data is a valid config: embedded Redis, open API
// on 127.0.0.1:8080, no surfaces, and a route named "default" with no
// targets.
//
// Parse does not validate: the caller applies its overrides (such as
// --listen) and then calls Validate.
//
// When every value decoded and the only problems are in what the document
// says (unknown keys, responders that name nobody) or in the environment
// it reads (a ${VAR} whose variable is not set, one that is empty where a
// value can't be), Parse returns the config as well as the error: a
// caller that wants every problem in one run calls Validate on it, which
// reports Parse's problems first and then its own. A key whose ${VAR}
// gave no value reads as not set, and Validate says nothing of it: its
// value is not known. Such a config never validates, and must not be used
// otherwise. A value of the wrong type, or a document that can't be read,
// returns no config: what decoded can't be trusted to validate.
func Parse(data []byte) (*Config, error) {
	return parse(data, os.LookupEnv)
}

func parse(data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	c := &Config{Store: Store{
		// Set before decoding, not after: 0 is a meaningful value for some
		// of these ("never"), so only a missing key gets the default.
		Retention:        Duration(DefaultRetention),
		DefaultExpiresIn: Duration(DefaultExpiresIn),
		SweepInterval:    Duration(DefaultSweepInterval),
		MaxWait:          Duration(DefaultMaxWait),
	}, Web: Web{
		SessionTTL:     Duration(DefaultSessionTTL),
		LinkTTL:        Duration(DefaultLinkTTL),
		MaxLinkStreams: DefaultMaxLinkStreams,
	}}

	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF): // empty, or only comments
		c.setDefaults()
		return c, nil
	case err != nil:
		return nil, tabHint(err, data)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second YAML document (---); the config is one document", more.Line)
	}

	// Expansion works on the parsed values rather than on the raw text, so
	// that ${VAR} in a comment is left alone and a value such as "a #b" or
	// "*x" stays one string instead of changing the document's structure.
	// Its problems don't stop here: a value the environment did not give
	// reads as not set, and the problems are reported with the rest.
	x := expander{lookupEnv: lookupEnv, fromEnv: map[int][]string{}, written: map[*yaml.Node]string{},
		unknown: map[*yaml.Node]bool{}, unset: map[string]*unsetVarError{}}
	x.walk(&doc, "")

	// Node.Decode has no KnownFields option, so unknown keys are found by
	// walking the document against the struct's yaml tags, which also lets
	// the error name the key's full path; so are values of the wrong type,
	// which the decoder reports by line alone.
	ck := checker{written: x.written, unknown: x.unknown, seen: map[anchorCheck]bool{}}
	ck.check(&doc, reflect.TypeFor[Config](), "")
	errs := slices.Concat(x.errs, ck.errs)
	if ck.badTypes > 0 {
		return nil, errors.Join(errs...)
	}
	if err := doc.Decode(c); err != nil {
		return nil, errors.Join(append(errs, x.hideValues(err))...)
	}
	c.setDefaults()
	c.env = x.env
	c.unknown = ck.unknownAt
	if len(errs) > 0 {
		// Returned with the config for Validate to report with its own
		// problems: else whoever sets up the bridge meets them one run at
		// a time, an unset variable first, an unknown key on the next
		// run, a missing secret on the one after.
		c.parseErrs = errs
		return c, errors.Join(errs...)
	}
	return c, nil
}

// setDefaults fills in what decoding left empty. The Store durations were
// set before decoding.
func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Redis.Prefix == "" {
		c.Redis.Prefix = DefaultRedisPrefix
	}
	if c.Slack != nil {
		c.Slack.APIURL = withSlash(c.Slack.APIURL, DefaultSlackAPIURL)
	}
	if c.Discord != nil {
		c.Discord.APIURL = withSlash(c.Discord.APIURL, DefaultDiscordAPIURL)
	}
	if len(c.Routes) == 0 {
		c.Routes = []Route{{Name: DefaultRoute}}
	}
	for i := range c.Routes {
		if c.Routes[i].Mode == "" {
			c.Routes[i].Mode = ModeAll
		}
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
	if c.Log.Format == "" {
		c.Log.Format = DefaultLogFormat
	}
}

// withSlash returns u, or def when u is empty, ending in "/": both Slack and
// Discord clients append method paths to it.
func withSlash(u, def string) string {
	if u == "" {
		return def
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// expander replaces ${VAR} and ${VAR:-default} in scalar values. ${VAR:-x}
// uses x when VAR is unset or empty; $${ writes a literal ${.
//
// A value it can't expand (a variable not set, ${ with no }, an empty
// variable where a value can't be empty) is made null, as if not set,
// and marked unknown: its problem is reported with the document's others,
// and nothing is said of the value, which is not known.
type expander struct {
	lookupEnv func(string) (string, bool)
	fromEnv   map[int][]string      // line -> the values there as written, before expansion
	written   map[*yaml.Node]string // each expanded value's node -> the value as written
	env       []envValue            // the values expanded (Config.env)
	unknown   map[*yaml.Node]bool   // values not expanded, for a problem in errs
	unset     map[string]*unsetVarError
	errs      []error // in the order met; an unset variable's where it is first used
}

// unsetVarError is a variable that ${VAR} names and the environment does
// not set, with every place the document uses it: one problem, however
// many keys read it.
type unsetVarError struct {
	name  string
	where []string // "path (line N)"
}

func (e *unsetVarError) Error() string {
	return fmt.Sprintf("%s: environment variable %s is not set: set it, or write ${%s:-} where the key may be left empty",
		strings.Join(e.where, ", "), e.name, e.name)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (x *expander) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			x.walk(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			x.walk(n.Content[i+1], joinKey(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			x.walk(c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v, unset, err := x.expand(n.Value)
		if err != nil || len(unset) > 0 {
			where := fmt.Sprintf("%s (line %d)", path, n.Line)
			if path == "" {
				where = fmt.Sprintf("(top level) (line %d)", n.Line)
			}
			if err != nil {
				x.errs = append(x.errs, fmt.Errorf("%s: %w", where, err))
			}
			for _, name := range unset {
				e := x.unset[name]
				if e == nil {
					e = &unsetVarError{name: name}
					x.unset[name] = e
					x.errs = append(x.errs, e)
				}
				if !slices.Contains(e.where, where) { // ${A}${A}
					e.where = append(e.where, where)
				}
			}
			x.unknownValue(n)
			return
		}
		if v == "" && (n.Style == 0 || strings.Contains(path, ".responders")) {
			// Empty, a plain value reads as not set. That leaves a list
			// item out silently, and responders open to anyone. Under
			// responders a quoted one ("${ONCALL}", as a flow list needs
			// it) is refused too, here where the variable can be named:
			// an empty id would be refused later as "empty", not said
			// to come from the variable.
			switch {
			case strings.HasSuffix(path, "]"):
				x.errs = append(x.errs, fmt.Errorf("%s (line %d): %s is empty, and a list item can't be: remove the item, or set the variable", path, n.Line, n.Value))
				x.unknownValue(n)
				return
			case strings.Contains(path, ".responders"):
				x.errs = append(x.errs, fmt.Errorf("%s (line %d): %s is empty: responders left unset let anyone in the channel answer (remove the key for that), so an empty variable can't leave them unset", path, n.Line, n.Value))
				x.unknownValue(n)
				return
			}
		}
		x.fromEnv[n.Line] = append(x.fromEnv[n.Line], n.Value)
		x.written[n] = n.Value
		x.env = append(x.env, envValue{sum: sha256.Sum256([]byte(v)), written: n.Value})
		n.Value = v
		if n.Style == 0 {
			// A plain scalar is typed by what it says once expanded:
			// gateway: ${GATEWAY} with GATEWAY=true is a bool.
			n.Tag = ""
		}
	}
	// Aliases share their anchor's node, expanded where it is defined.
}

// unknownValue makes scalar n, whose value the environment did not give,
// null: the key reads as not set (its default), of any type, so that the
// rest of the document is checked and decoded. The checker notes where it
// is used (Config.unknown).
func (x *expander) unknownValue(n *yaml.Node) {
	n.Value, n.Tag, n.Style = "", "!!null", 0
	x.unknown[n] = true
}

// expand returns s with its ${...} replaced, and the variables it names
// that are not set, each once. Its errors name variables, never values.
func (x *expander) expand(s string) (_ string, unset []string, _ error) {
	var b strings.Builder
	var errs []error
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // $${ -> ${
			b.WriteString(s[:i])
			b.WriteString("{")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs = append(errs, fmt.Errorf("%q has no closing }", s[i:min(len(s), i+20)]))
			break
		}
		expr := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !envName.MatchString(name) {
			errs = append(errs, fmt.Errorf("${%s}: %q is not an environment variable name", expr, name))
			continue
		}
		v, ok := x.lookupEnv(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			if !slices.Contains(unset, name) {
				unset = append(unset, name)
			}
			continue
		}
		b.WriteString(v)
	}
	return b.String(), unset, errors.Join(errs...)
}

var typeErrorValue = regexp.MustCompile("`[^`]*`")

// hideValues rewrites the decoder's messages about lines that held ${VAR}
// so that they quote the value as written, not its expansion: the decoder
// quotes up to 7 characters of a bad value, and a token pasted into the
// wrong key must not reach an error message.
func (x *expander) hideValues(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	out := &yaml.TypeError{Errors: slices.Clone(te.Errors)}
	for i, msg := range out.Errors {
		var line int
		if _, err := fmt.Sscanf(msg, "line %d:", &line); err != nil {
			continue
		}
		written, ok := x.fromEnv[line]
		if !ok {
			continue
		}
		repl := "`<from the environment>`"
		if len(written) == 1 {
			repl = "`" + strings.ReplaceAll(written[0], "`", "") + "`"
		}
		out.Errors[i] = typeErrorValue.ReplaceAllLiteralString(msg, repl)
	}
	return out
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// anchorCheck is an anchored node checked against a type.
type anchorCheck struct {
	n *yaml.Node
	t reflect.Type
}

// checker walks a document against the Config type before it is decoded:
// the decoder's own errors name a line, never the key, and one line of a
// flow mapping ({max_wait: 90, retention: 1h}) may hold several.
type checker struct {
	written   map[*yaml.Node]string // values expanded from the environment, as written
	unknown   map[*yaml.Node]bool   // values the environment did not give (expander.unknown)
	unknownAt []string              // the paths those are read at (Config.unknown)
	seen      map[anchorCheck]bool
	errs      []error
	badTypes  int // errors about values, not keys: the decoder would repeat them
}

// check reports every mapping key in n that names no field of t, as
// "path.key: unknown key (line N); ...", and every value that can't be read
// as its field's type, as "path (line N): cannot read `90` as a duration
// (write 90s)". A value from the environment is shown as written
// (`${VAR}`), never expanded: it may be a secret in the wrong key.
//
// An anchor's node is checked once per type however often it is aliased
// (seen): merge keys that alias one another would otherwise cost time
// exponential in their number, and an anchor merged into itself would
// recurse until the stack overflowed. The decoder then reports the loop or
// the excessive aliasing.
//
// A section written with nothing under it (`slack:` whose keys are all
// commented out, or `slack: ~`) becomes an empty one (`slack: {}`), whose
// missing keys Validate names: decoded as null it would leave the
// pointer nil, turning the surface off in silence, and a route target
// that uses it would be told there is no such section, though the line is
// there. A value the environment gave empty stays not set.
func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	section := t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Before seen: an anchored value the environment did not give is
	// noted at every key that reads it, not only the first.
	r := n
	for r.Kind == yaml.AliasNode && r.Alias != nil {
		r = r.Alias
	}
	if c.unknown[r] {
		c.unknownAt = append(c.unknownAt, path)
		return
	}
	if _, fromEnv := c.written[n]; section && !fromEnv && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		n.Kind, n.Tag, n.Value = yaml.MappingNode, "!!map", ""
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
		if c.seen[anchorCheck{n, t}] {
			return
		}
		c.seen[anchorCheck{n, t}] = true
	}
	if n.Kind == yaml.DocumentNode {
		for _, d := range n.Content {
			c.check(d, t, path)
		}
		return
	}
	if respondersTypes[t] {
		c.responders(n, t, path)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // not set: the key keeps its default
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() != reflect.Slice && t.Kind() != reflect.Struct:
		if n.Kind != yaml.ScalarNode {
			c.badValue(n, path, "expected one value, got %s", c.what(n))
		} else if msg := c.scalarProblem(n, t); msg != "" {
			c.badValue(n, path, "%s", msg)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			msg := "expected a list, got " + c.what(n)
			if n.Kind == yaml.ScalarNode {
				one := c.shown(n, false)
				if _, fromEnv := c.written[n]; fromEnv {
					one = `"` + one + `"` // YAML takes no { in a plain value inside [...]
				}
				msg += fmt.Sprintf("; write [%s] for a list of one", one)
			}
			c.badValue(n, path, "%s", msg)
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case n.Kind != yaml.MappingNode:
		c.badValue(n, path, "expected keys with values (key: value), got %s", c.what(n))
	default:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" && k.Style == 0 { // <<: *anchor
				if v.Kind == yaml.SequenceNode {
					for _, m := range v.Content {
						c.check(m, t, path)
					}
				} else {
					c.check(v, t, path)
				}
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				known := make([]string, 0, len(fields))
				for name := range fields {
					known = append(known, name)
				}
				slices.Sort(known)
				where := "the top level"
				if path != "" {
					where = path
				}
				c.errs = append(c.errs, fmt.Errorf("%s: unknown key (line %d); the keys of %s are: %s",
					joinKey(path, k.Value), k.Line, where, strings.Join(known, ", ")))
				continue
			}
			c.check(v, ft, joinKey(path, k.Value))
		}
	}
}

// respondersTypes are the types of a target's responders.
var respondersTypes = map[reflect.Type]bool{
	reflect.TypeFor[SlackResponders]():   true,
	reflect.TypeFor[DiscordResponders](): true,
}

// responders refuses responders, or one of their lists, written to name
// nobody: `responders: {users: []}`, `users:` with nothing after it, an
// empty `responders:`. Whoever wrote that meant "nobody yet", or made a
// mistake; the bridge would read it as no limit at all, and let anyone in
// the channel answer. Leaving responders out is how to say that.
func (c *checker) responders(n *yaml.Node, t reflect.Type, path string) {
	fields := yamlFields(t)
	empty := func(v *yaml.Node) bool {
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if c.unknown[v] {
			return false // not known, and its problem is reported
		}
		return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" ||
			v.Kind == yaml.SequenceNode && len(v.Content) == 0 ||
			v.Kind == yaml.MappingNode && len(v.Content) == 0
	}
	if empty(n) {
		c.errs = append(c.errs, fmt.Errorf("%s (line %d): empty, it names nobody; list %s, or remove responders to let anyone in the channel answer",
			path, n.Line, strings.Join(slices.Sorted(maps.Keys(fields)), " or ")))
		return
	}
	if n.Kind != yaml.MappingNode {
		return // an alias, or a wrong type check reports
	}
	someone := false // another key may name someone: a list, or a merge
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !empty(n.Content[i+1]) {
			someone = true
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, ok := fields[k.Value]; !ok || !empty(v) {
			continue
		}
		why, fix := ", and responders that name nobody let anyone in the channel answer", "remove responders to let anyone in the channel answer"
		if someone {
			why, fix = "", "remove the key"
		}
		c.errs = append(c.errs, fmt.Errorf("%s (line %d): an empty list names nobody%s; list who may answer, or %s",
			joinKey(path, k.Value), k.Line, why, fix))
	}
}

func (c *checker) badValue(n *yaml.Node, path, format string, args ...any) {
	if path == "" {
		path = "the top level"
	}
	c.errs = append(c.errs, fmt.Errorf("%s (line %d): %s", path, n.Line, fmt.Sprintf(format, args...)))
	c.badTypes++
}

// what names what n holds, for "expected X, got Y".
func (c *checker) what(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "keys with values"
	}
	return c.shown(n, true)
}

// shown is scalar n as an error may show it: a value from the environment
// as written (`${VAR}`); any other cut to 7 characters when long, as the
// decoder cuts it, so a token pasted into the wrong key is not repeated
// whole. quoted wraps it in backticks.
func (c *checker) shown(n *yaml.Node, quoted bool) string {
	v, fromEnv := c.written[n]
	if !fromEnv {
		v = n.Value
		if utf8.RuneCountInString(v) > 10 {
			v = string([]rune(v)[:7]) + "..."
		}
	}
	if quoted {
		return "`" + strings.ReplaceAll(v, "`", "") + "`"
	}
	return v
}

// scalarProblem says why scalar n can't be read as a t, or "" when it can.
// Of a value from the environment it describes the value without showing
// it.
func (c *checker) scalarProblem(n *yaml.Node, t reflect.Type) string {
	if err := n.Decode(reflect.New(t).Interface()); err == nil {
		return ""
	}
	_, fromEnv := c.written[n]
	v := c.shown(n, true)
	text := ""
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		text = " (quoted, it is text: write it without quotes)"
	}
	switch {
	case t == reflect.TypeFor[Duration]():
		p := durationProblem(n.Value)
		switch {
		case p == bareNumber && fromEnv:
			return fmt.Sprintf("cannot read %s as a duration: its value is a number without a unit (write one, such as 90s)", v)
		case p == bareNumber:
			return fmt.Sprintf("cannot read %s as a duration (write %ss)", v, n.Value)
		case fromEnv:
			return fmt.Sprintf("cannot read %s as a duration: its value (not shown) is not a number with a unit, such as 90s, 24h or 0", v)
		}
		return fmt.Sprintf("cannot read %s as a duration: write a number with a unit, such as 90s, 24h or 0", v)
	case t.Kind() == reflect.Bool:
		if fromEnv && text == "" {
			return fmt.Sprintf("cannot read %s as true or false: its value (not shown) is neither", v)
		}
		return fmt.Sprintf("cannot read %s as true or false%s", v, text)
	case t.Kind() == reflect.Int:
		if fromEnv && text == "" {
			return fmt.Sprintf("cannot read %s as a whole number: its value (not shown) is not one", v)
		}
		return fmt.Sprintf("cannot read %s as a whole number%s", v, text)
	}
	return fmt.Sprintf("cannot read %s as %s", v, t)
}

// yamlFields maps the yaml keys of struct t to their field types, as
// yaml.v3 names them: the tag's name, or the lowercased field name.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// tabHint adds to go-yaml's error for a tab where YAML takes only spaces
// ("found character that cannot start any token") what the character is.
func tabHint(err error, data []byte) error {
	if strings.Contains(err.Error(), "did not find expected ','") {
		return flowHint(err, data)
	}
	if !strings.Contains(err.Error(), "found character that cannot start any token") {
		return err
	}
	for i, line := range strings.Split(string(data), "\n") {
		if indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; strings.Contains(indent, "\t") {
			return fmt.Errorf("%w: line %d is indented with a tab; YAML indents with spaces only", err, i+1)
		}
	}
	return err
}

// unquotedVar is ${ inside a flow collection ({...} or [...]) and not
// right after a quote: there its braces end the collection.
var unquotedVar = regexp.MustCompile(`[{\[]([^"'\n]*[\s,:])?\$\{`)

// flowHint names the line of a ${VAR} written without quotes inside {...}
// or [...], where the parser's message ("did not find expected ',' or
// '}'") points at the line before.
func flowHint(err error, data []byte) error {
	for i, line := range strings.Split(string(data), "\n") {
		if unquotedVar.MatchString(line) {
			return fmt.Errorf("%w: line %d has ${...} inside {...} or [...] without quotes; write it as \"${VAR}\"", err, i+1)
		}
	}
	return err
}
