// Package nodejoin hands node agents their own client certificates. An
// agent that joins with the agent token (or, as before that existed, the
// admin's cluster token) sends a certificate request for
// system:node:<name> (group system:nodes) and gets it signed by the
// cluster CA; afterwards it authenticates with that certificate only, and
// renews it with the certificate itself before it expires. Its key never
// leaves the agent.
package nodejoin
