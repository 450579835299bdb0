"""The floor Streamlit itself sets: a page with a title and one line (bench/open_speed.py opens it beside the app)."""

import streamlit as st

st.title("A bare Streamlit page")
st.write("One line.")
