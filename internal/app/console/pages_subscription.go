package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/commerce-integration/commerce/db"
)

// subscriptionData is a subscription's page: its state and why, its last
// 24 hours per hour, its backlog, its held deliveries and when they are
// probed, its settings and where its secret rotation stands.
type subscriptionData struct {
	db.SubscriptionDetail
	Now   time.Time
	Hours []hourBar
	// Attempts and Succeeded total the 24 hours.
	Attempts, Succeeded int
	// MaxMedianMS is the longest hourly median, the duration chart's top.
	MaxMedianMS float64
	// ProbeIntervalMS is the wait after the next probe should it fail.
	ProbeIntervalMS int
}

// hourBar is one hour of the charts: the figures, as text and as bars
// (heights in the charts' units, 0 to chartHeight).
type hourBar struct {
	db.HourFigures
	X                    int
	RateHeight, MSHeight float64
	RateY, MSY           float64
	Rate, Median         string
}

// chartHeight and barWidth are the charts' units (their viewBox).
const (
	chartHeight = 60
	barWidth    = 10
)

func (c *console) subscription(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	now := time.Now()
	s, err := c.DB.GetSubscriptionDetail(r.Context(), v.OrgID, id, now)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	hours, err := c.DB.SubscriptionHours(r.Context(), v.OrgID, id, now)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d := subscriptionData{SubscriptionDetail: s, Now: now, ProbeIntervalMS: int(s.ProbeInterval.Milliseconds())}
	for _, h := range hours {
		if h.MedianMS != nil && *h.MedianMS > d.MaxMedianMS {
			d.MaxMedianMS = *h.MedianMS
		}
		d.Attempts += h.Attempts
		d.Succeeded += h.Succeeded
	}
	for i, h := range hours {
		b := hourBar{HourFigures: h, X: i * barWidth, Rate: "no attempts", Median: "none"}
		if rate := h.SuccessRate(); rate != nil {
			b.RateHeight = *rate * chartHeight
			b.Rate = fmt.Sprintf("%.0f%% of %d", *rate*100, h.Attempts)
		}
		if h.MedianMS != nil {
			b.Median = fmt.Sprintf("%.0f ms", *h.MedianMS)
			if d.MaxMedianMS > 0 {
				b.MSHeight = *h.MedianMS / d.MaxMedianMS * chartHeight
			}
		}
		b.RateY, b.MSY = chartHeight-b.RateHeight, chartHeight-b.MSHeight
		d.Hours = append(d.Hours, b)
	}
	c.renderPage(w, r, http.StatusOK, "subscription", page{Nav: "webhooks", Title: "Subscription to " + clip(80, target(s.URL)), Data: d})
}
