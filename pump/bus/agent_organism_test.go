package bus

import (
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// agentOrganism builds an organism whose agent poet talks to the model at
// url (and keeps the hello-world greeter, shouter and response-handler).
func agentOrganism(url string) buildFunc {
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: chat}
llm:
  retries: 0
  backends:
    - provider: openai
      name: local
      base_url: `+url+`
      model: test-model
listeners:
  - name: poet
    agent: true
    description: Writes short poems
    prompt: You are poet.
`))
		if err != nil {
			return nil, err
		}
		return organism.New(cfg, o)
	}
}
