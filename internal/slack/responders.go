package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/askbridge/askbridge/internal/config"
)

// responders decides who may answer on a target: anyone when the target
// names nobody, else its users and the members of its user groups. Group
// members come from usergroups.users.list and are cached for ttl.
type responders struct {
	members func(ctx context.Context, group string) ([]string, error)
	ttl     time.Duration
	now     func() time.Time

	mu     sync.Mutex
	groups map[string]groupMembers
}

type groupMembers struct {
	users   map[string]bool
	fetched time.Time
}

func newResponders(members func(context.Context, string) ([]string, error), ttl time.Duration, now func() time.Time) *responders {
	return &responders{members: members, ttl: ttl, now: now, groups: map[string]groupMembers{}}
}

// cached decides from what is known without asking Slack; known is false
// when the answer needs a group that is not cached.
func (r *responders) cached(t *config.SlackTarget, user string) (ok, known bool) {
	if open(t) || slices.Contains(t.Responders.Users, user) {
		return true, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	known = true
	for _, g := range t.Responders.Groups {
		m, hit := r.groups[g]
		if !hit || r.now().Sub(m.fetched) > r.ttl {
			known = false
			continue
		}
		if m.users[user] {
			return true, true
		}
	}
	return false, known
}

func open(t *config.SlackTarget) bool {
	return len(t.Responders.Users) == 0 && len(t.Responders.Groups) == 0
}

var errNoTarget = errors.New("the message is not one the bridge posted for this request")

// allowed reports whether user may answer on t, asking Slack for the
// members of groups that are not cached. An error means it could not tell.
func (r *responders) allowed(ctx context.Context, t *config.SlackTarget, user string) (bool, error) {
	if t == nil {
		return false, errNoTarget
	}
	if ok, known := r.cached(t, user); ok || known {
		return ok, nil
	}
	var errs []error
	for _, g := range t.Responders.Groups {
		users, err := r.group(ctx, g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if users[user] {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

// group returns the members of a user group, from the cache while fresh.
// The lock is not held while Slack is asked.
func (r *responders) group(ctx context.Context, g string) (map[string]bool, error) {
	r.mu.Lock()
	m, hit := r.groups[g]
	r.mu.Unlock()
	if hit && r.now().Sub(m.fetched) <= r.ttl {
		return m.users, nil
	}
	list, err := r.members(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("members of user group %s: %w", g, err)
	}
	m = groupMembers{users: make(map[string]bool, len(list)), fetched: r.now()}
	for _, u := range list {
		m.users[u] = true
	}
	r.mu.Lock()
	r.groups[g] = m
	r.mu.Unlock()
	return m.users, nil
}
