"""The floor a page that draws one chart sets: bench/bare_page.py and one small heatmap, drawn as every chart of the
app is (views/widgets.py chart: a components v2 element that loads the app's plotly.js and draws the figure).
bench/open_speed.py opens it beside the app and the bare page. Streamlit serves app/static/ from the folder of the
page's script, so the bench runs a copy of this file beside a link to the project's static/, from the project's root."""

import os
import sys

import numpy as np
import plotly.graph_objects as go
import streamlit as st

sys.path.insert(0, os.getcwd())  # the project's root: streamlit run puts the script's folder on the path, not it
from views.widgets import chart  # noqa: E402

st.title("A bare Streamlit page")
st.write("One line.")
z = np.arange(15 * 15).reshape(15, 15) / (15 * 15)  # a 15-token sentence's map, in size
chart(go.Figure(go.Heatmap(z=z), layout=dict(width=500, height=450)), key="bare_chart", width="content")
