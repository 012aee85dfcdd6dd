package llm

import "github.com/conclave-ai/conclave/engine/coord"

// Prices maps a model name to its price.
type Prices map[string]coord.Price

// Cost is the USD cost of the tokens at model's price, or 0 when the model
// has no price. The second result says whether a price was found.
func (p Prices) Cost(model string, inputTokens, outputTokens int64) (float64, bool) {
	price, ok := p[model]
	if !ok {
		return 0, false
	}
	return price.Cost(inputTokens, outputTokens), true
}
