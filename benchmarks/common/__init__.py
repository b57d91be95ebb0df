"""What every benchmark shares: the data sets (:mod:`.data`), one timer (:mod:`.timing`), the
machine line (:mod:`.machine`) and the markdown result file (:mod:`.report`)."""
