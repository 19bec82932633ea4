// Package reviews serves the create-only "review" APIs: the
// authorization.k8s.io access and rules reviews that `kubectl auth can-i`
// uses, and the authentication.k8s.io SelfSubjectReview (`kubectl auth
// whoami`) and TokenReview. Nothing is stored; each POST is answered from
// the request's user, the authorizer and the authenticator.
package reviews
